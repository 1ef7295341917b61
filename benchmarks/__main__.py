"""``python -m benchmarks [--backend NAME] [--quick] [--output PATH]``."""

from benchmarks.harness import main

raise SystemExit(main())
