"""Definite assignment: whether a local holds a value on every path to where it is read.

Python raises ``UnboundLocalError`` when a local is read on a path that did not assign
it. A kernel has no such check at run time (the local would silently read 0), so the
frontend refuses such a read when it builds the IR. It walks the function in order
and keeps, with :class:`DefiniteAssignment`, the locals assigned on every path to the
statement at hand:

- an assignment counts from the statement after it, on its own path;
- after an ``if``, a local counts when every branch that reaches the end of the
  ``if`` assigns it (a branch ending in ``break``, ``continue`` or ``return`` does
  not reach it); a missing ``else`` is a branch that assigns nothing. A constant
  condition keeps only the taken branch, as the frontend does;
- the body of a ``for`` or ``while`` loop may run zero times: what it assigns,
  the variable of a ``for`` included, does not count after the loop. Inside the
  body it counts from the assignment on, for the rest of that iteration;
- ``while True`` ends only at a ``break``: after it, what was assigned at every
  ``break`` counts;
- the statements after a ``break``, ``continue`` or ``return`` in the same block
  never run: what they assign counts nowhere;
- an inlined ``@cube_fn`` helper is checked the same way in its own scope (its
  builder has its own tracker), its parameters assigned where it starts.

Like any such analysis it is conservative: ``if c: x = 1`` then ``if c: y = x``
is refused although the second ``if`` runs only where the first did.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Construct", "DefiniteAssignment", "Fork", "Loop"]


@dataclass(frozen=True)
class Construct:
    """A statement that decides whether others run: an ``if``, a loop, or a jump
    (``break``, ``continue``, ``return``) that makes the rest of its block dead.

    ``kind`` is ``"if"``, ``"for"``, ``"while"``, ``"while True"``, ``"break"``,
    ``"continue"``, ``"return"`` or ``"endless"`` (a ``while True`` with no ``break``,
    which nothing follows); ``line`` is its line in the file.
    """

    kind: str
    line: int


@dataclass(frozen=True)
class _Assignment:
    """Where a local was last assigned: the line, and the construct that may have kept
    it from running (the innermost ``if`` or loop around it, or the jump before it;
    None at the top of the function)."""

    line: int
    within: Construct | None


@dataclass(frozen=True)
class _State:
    """The locals assigned on every path to a point; ``bound`` None: no path reaches
    it, because of the jump ``dead_after``."""

    bound: frozenset[str] | None
    dead_after: Construct | None


def _join(a: _State, b: _State) -> _State:
    """The state where the paths of ``a`` and ``b`` meet."""
    if a.bound is None:
        return b
    if b.bound is None:
        return a
    return _State(a.bound & b.bound, None)


class DefiniteAssignment:
    """The locals that hold a value on every path to the statement the frontend is at.

    The frontend tells it, in source order, of every assignment (:meth:`assign`), jump
    (:meth:`jump`), ``if`` (:meth:`fork`) and loop (:meth:`loop`), and asks it before
    every read of a local (:meth:`is_assigned`, :meth:`unassigned`).
    """

    def __init__(self, assigned: Iterable[str] = ()) -> None:
        self.state = _State(frozenset(assigned), None)
        self.within: list[Construct] = []
        # One list per enclosing loop: the state at each of its `break`s.
        self.breaks: list[list[_State]] = []
        self.last: dict[str, _Assignment] = {}

    def assign(self, name: str, line: int) -> None:
        """``name`` is assigned on ``line``, at the current point."""
        bound = self.state.bound
        if bound is None:
            self.last[name] = _Assignment(line, self.state.dead_after)
            return
        self.last[name] = _Assignment(line, self.within[-1] if self.within else None)
        self.state = _State(bound | {name}, None)

    def is_assigned(self, name: str) -> bool:
        """Whether ``name`` holds a value here (anything does in code no path reaches)."""
        bound = self.state.bound
        return bound is None or name in bound

    def jump(self, kind: str, line: int) -> None:
        """A ``break``, ``continue`` or ``return`` on ``line``: the rest of the block is
        dead."""
        if self.state.bound is None:
            return
        if kind == "break" and self.breaks:
            self.breaks[-1].append(self.state)
        self.state = _State(None, Construct(kind, line))

    def fork(self, line: int) -> Fork:
        """Enter the ``if`` on ``line``; its first branch follows."""
        return Fork(self, line)

    def loop(self, kind: str, line: int) -> Loop:
        """Enter the body of the loop on ``line`` (``kind``: ``"for"``, ``"while"`` or
        ``"while True"``)."""
        return Loop(self, Construct(kind, line))

    def unassigned(self, name: str) -> str:
        """Why ``name`` may hold no value here, and how to fix it, for an error message
        (call it only where :meth:`is_assigned` is False)."""
        head = f"`{name}` may be read before it is assigned"
        last = self.last.get(name)
        if last is None or last.within is None:
            return f"{head}; assign it on every path before this read"
        at, c = last.line, last.within
        if c.kind == "if":
            return (f"{head}: its assignment on line {at} is in a branch of the `if` on "
                    f"line {c.line}, which may not be taken (Python would raise "
                    f"UnboundLocalError); assign `{name}` before the `if`, or in every "
                    "branch of it (an `else` included)")
        if c.kind == "for" and at == c.line:
            return (f"{head}: it is the variable of the `for` loop on line {c.line}, "
                    "which may run zero times; to use its last value after the loop, copy "
                    "it inside the loop into a local that is also assigned before it")
        if c.kind in ("for", "while"):
            return (f"{head}: its assignment on line {at} is in the body of the "
                    f"`{c.kind}` loop on line {c.line}, which may run zero times; "
                    f"assign `{name}` before the loop")
        if c.kind == "while True":
            return (f"{head}: its assignment on line {at} does not run before every "
                    f"`break` of the `while True` loop on line {c.line}; assign `{name}` "
                    f"before the loop")
        if c.kind == "endless":
            return (f"{head}: its assignment on line {at} comes after the `while True` "
                    f"loop on line {c.line}, which has no `break`, so it never runs")
        return (f"{head}: its assignment on line {at} comes after the `{c.kind}` on line "
                f"{c.line}, so it never runs; move it before the `{c.kind}`")


class Fork:
    """An ``if`` being walked: :meth:`otherwise` between its branches, :meth:`join`
    after them."""

    def __init__(self, flow: DefiniteAssignment, line: int) -> None:
        self.flow = flow
        self.before = flow.state
        self.taken: _State | None = None
        flow.within.append(Construct("if", line))

    def otherwise(self) -> None:
        """The first branch is done; the other starts from the state before the ``if``."""
        self.taken = self.flow.state
        self.flow.state = self.before

    def join(self) -> None:
        """Both branches are done: continue with what both assigned."""
        flow = self.flow
        flow.within.pop()
        assert self.taken is not None, "Fork.otherwise() was not called"
        flow.state = _join(self.taken, flow.state)


class Loop:
    """A loop body being walked; :meth:`exit` after it."""

    def __init__(self, flow: DefiniteAssignment, construct: Construct) -> None:
        self.flow = flow
        self.construct = construct
        self.before = flow.state
        flow.within.append(construct)
        flow.breaks.append([])

    def exit(self) -> None:
        """The body is done: continue with what held before the loop (the body may not
        run), or for ``while True`` with what held at every ``break``."""
        flow = self.flow
        flow.within.pop()
        breaks = flow.breaks.pop()
        if self.construct.kind != "while True":
            flow.state = self.before
            return
        # With no break, nothing after the loop runs.
        state = _State(None, Construct("endless", self.construct.line))
        for at_break in breaks:
            state = _join(state, at_break)
        flow.state = state
