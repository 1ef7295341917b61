"""``cubecl-server bundle``: ship what a workload launched to machines that have not
compiled it (``export``, ``import``), and look into a bundle (``ls``, ``verify``)."""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections.abc import Callable

from cubecl_server.allocator import format_bytes
from cubecl_server.cli.cache import named_entries
from cubecl_server.cli.progress import steps
from cubecl_server.cli.table import WIDTH, Subparsers, print_table, shorten
from cubecl_server.client import create_client
from cubecl_server.compiler.store import environment_database
from cubecl_server.config import config
from cubecl_server.errors import BackendUnavailable, CubeclError, StoreError
from cubecl_server.launched import Launched
from cubecl_server.persistence import SqliteStore, tune_cache
from cubecl_server.persistence.bundle import (
    Bundle,
    Place,
    Target,
    export_bundle,
    import_bundle,
    read_bundle,
    verify_entries,
)
from cubecl_server.persistence.signing import Secret, fleet_secret

__all__ = ["NOT_APPLICABLE", "add_bundle_command"]

NOT_APPLICABLE = 3
"""The exit code of ``bundle import`` for a bundle made for another backend, variant
or build id (nothing was changed)."""


def add_bundle_command(subparsers: Subparsers) -> None:
    """Register ``bundle`` and its subcommands."""
    parser = subparsers.add_parser(
        "bundle", help="export, import and inspect bundles of compiled kernels",
        description="A bundle is one file holding the artifacts (and autotune results) a "
                    "workload needs, signed with the fleet's secret (CUBECL_STORE_SECRET "
                    "or [cache] secret_file): a machine that imports it runs the workload "
                    "without compiling.")
    sub = parser.add_subparsers(title="bundle commands", metavar="ACTION", required=True)
    export = sub.add_parser("export", help="write a bundle from the current environment")
    export.add_argument("output", help="the bundle file to write")
    export.add_argument("--launched", metavar="FILE",
                        help="only what this collection names (written by a run with "
                             "CUBECL_LAUNCHED=FILE); default: every entry of the backend")
    _add_backend_options(export)
    export.set_defaults(func=_export)
    imp = sub.add_parser("import", help="add a bundle's entries to the current environment")
    imp.add_argument("bundle", help="the bundle file")
    imp.add_argument("--trust", action="store_true",
                     help="import without checking signatures (a bundle is code: only one "
                          "you made or fully trust)")
    imp.add_argument("--device", type=int, default=0,
                     help="the device whose variant the bundle must be for (default 0)")
    imp.set_defaults(func=_import)
    ls = sub.add_parser("ls", help="a bundle's manifest and entries")
    ls.add_argument("bundle", help="the bundle file")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ls.add_argument("--wide", action="store_true",
                    help=f"print every cell whole (the table is cut to {WIDTH} columns)")
    ls.set_defaults(func=_ls)
    verify = sub.add_parser("verify", help="check a bundle's signatures, checksums and "
                            "bindings without importing it")
    verify.add_argument("bundle", help="the bundle file")
    verify.set_defaults(func=_verify)


def _add_backend_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", help="the backend (default: the configured one)")
    parser.add_argument("--device", type=int, default=0,
                        help="the device whose variant to export (default 0)")


def _error(text: str) -> int:
    print(f"error: {text}", file=sys.stderr)
    return 1


def _current(backend: str, device: int) -> tuple[Target, str]:
    """This machine's target for ``backend`` and the namespace of its kernels."""
    try:
        c = create_client(backend, device)
    except BackendUnavailable:
        # No device (cuda here): the compile-only server has the same variant.
        c = create_client(backend, device, compile_only=True)
    store = c.loader.target.store
    if store is None:
        raise StoreError("compilation caching is off: there is no store to bundle or "
                         "import into")
    return (Target(backend, c.loader.artifact_compiler.variant, c.loader.build_id),
            store.kernels_namespace)


def _with_db(action: Callable[[SqliteStore], int]) -> int:
    try:
        with SqliteStore.open(environment_database()) as db:
            return action(db)
    except (CubeclError, ValueError) as e:
        return _error(str(e))


def _places(args: argparse.Namespace, db: SqliteStore) -> tuple[Target, list[Place]]:
    if args.launched is not None:
        collection = Launched.load(args.launched)
        targets = [t for t in collection.targets()
                   if args.backend is None or t[0] == args.backend]
        if len(targets) != 1:
            found = "; ".join(f"{b} {v} build {i[:12]}" for b, v, i in
                              collection.targets()) or "nothing"
            raise StoreError(f"{args.launched} names {found}: a bundle holds one backend, "
                             "variant and build id (choose with --backend)" if targets
                             else f"{args.launched} names no entry of backend "
                                  f"{args.backend or 'any'} (it names {found})")
        target = Target(*targets[0])
        return target, [Place(e.kind, e.name, e.namespace, e.key) for e in collection.entries
                        if (e.backend, e.variant, e.build_id) == targets[0]]
    target, kernels = _current(args.backend or config().backend, args.device)
    tunes = tune_cache.namespace(target.backend, target.variant, "")
    # Each artifact under the name of its kernel, which `bundle ls` and progress show.
    places = [Place("artifact", "" if name == "-" else name, e.namespace, e.key)
              for e, name, _ in named_entries(db, kernels) if e.namespace == kernels]
    places += [Place("tuning", e.namespace.rsplit("/", 1)[-1], e.namespace, e.key)
               for e in db.keys(tunes)]
    return target, places


def _export(args: argparse.Namespace) -> int:
    try:
        secret = fleet_secret()
    except StoreError as e:
        return _error(str(e))
    if secret is None:
        return _error("a bundle is signed: set CUBECL_STORE_SECRET (or [cache] secret_file "
                      "in cubecl.toml) to the fleet's secret")

    def action(db: SqliteStore) -> int:
        target, places = _places(args, db)
        with steps("bundle export", len(places)) as step:
            manifest, missing = export_bundle(args.output, db, target, places, secret,
                                              step=step)
        for place in missing:
            print(f"not in the store (skipped): {place.kind} {place.name} {place.key[:16]}")
        print(f"wrote {len(manifest.entries)} entries for {target.backend} "
              f"({target.variant}, build {target.build_id[:12]}) to {args.output}")
        return 0
    return _with_db(action)


def _import(args: argparse.Namespace) -> int:
    try:
        secret = None if args.trust else fleet_secret()
        manifest = read_bundle(args.bundle).manifest
        target, _ = _current(manifest.target.backend, args.device)
    except (CubeclError, ValueError) as e:
        return _error(str(e))

    def action(db: SqliteStore) -> int:
        with steps("bundle import", len(manifest.entries)) as step:
            report = import_bundle(args.bundle, db, target, secret, trust=args.trust,
                                   step=step)
        theirs = report.bundle.manifest.target
        if not report.applicable:
            print(f"not applicable: the bundle is for {theirs.backend} ({theirs.variant}, "
                  f"build {theirs.build_id[:12]}), this machine is {target.backend} "
                  f"({target.variant}, build {target.build_id[:12]}); nothing imported")
            return NOT_APPLICABLE
        for problem in report.problems:
            print(f"rejected {problem.entry.kind} {problem.entry.name} "
                  f"{problem.entry.key[:16]}: {problem.reason}")
        print(f"imported {len(report.imported)} entries, {len(report.already)} already "
              f"here, {len(report.problems)} rejected"
              + (" (signatures not checked: --trust)" if args.trust else ""))
        return 1 if report.problems else 0
    return _with_db(action)


def _read(path: str) -> tuple[Bundle, Secret | None]:
    secret = fleet_secret()
    return read_bundle(path, secret), secret


def _signature(bundle: Bundle) -> str:
    return {True: "valid", False: "INVALID (not this fleet's secret)",
            None: "not checked (no secret configured)"}[bundle.signed]


def _ls(args: argparse.Namespace) -> int:
    try:
        bundle, _ = _read(args.bundle)
    except (CubeclError, ValueError) as e:
        return _error(str(e))
    m = bundle.manifest
    if args.json:
        print(json.dumps({"backend": m.target.backend, "variant": m.target.variant,
                          "build_id": m.target.build_id, "cubecl_server": m.version,
                          "created": m.created, "signature": bundle.signed,
                          "entries": [e.__dict__ for e in m.entries]}, indent=2))
        return 0
    created = datetime.datetime.fromtimestamp(m.created).strftime("%Y-%m-%d %H:%M:%S")
    for label, value in (("backend", m.target.backend), ("variant", m.target.variant),
                         ("build id", m.target.build_id), ("version", m.version),
                         ("created", created), ("signature", _signature(bundle))):
        line = f"{label:<10} {value}"
        print(line if args.wide else shorten(line, WIDTH))
    print_table(("KIND", "NAME", "KEY", "SIZE"),
                [(e.kind, e.name or "-", e.key if args.wide else e.key[:16],
                  format_bytes(e.size)) for e in m.entries],
                shrink=(1,), width=None if args.wide else WIDTH)
    return 0


def _verify(args: argparse.Namespace) -> int:
    try:
        bundle, secret = _read(args.bundle)
        problems = verify_entries(bundle, secret if bundle.signed else None)
    except (CubeclError, ValueError) as e:
        return _error(str(e))
    print(f"manifest signature: {_signature(bundle)}")
    for problem in problems:
        print(f"bad {problem.entry.kind} {problem.entry.name} {problem.entry.key[:16]}: "
              f"{problem.reason}")
    print(f"{len(bundle.manifest.entries) - len(problems)} of {len(bundle.manifest.entries)} "
          "entries sound" + ("" if secret is not None else " (signatures not checked)"))
    return 1 if problems or bundle.signed is False else 0
