"""What the command line prints: tables sized to the terminal, compile progress, sizes in human units."""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Sequence

PIPED_WIDTH = 120  # table width when stdout is not a terminal and $COLUMNS is unset
LINE_EVERY_S = 5.0  # without a terminal, compile progress is a line this often
NAME_MIN = 16  # a table's first column keeps this many characters however narrow the terminal


def _columns_env() -> int | None:
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        return None


def console_for(table=None, wide: bool = False):
    """A rich Console for stdout: the terminal's width, or $COLUMNS, or 120 columns when piped.

    ``wide`` with a ``table`` and no terminal: as wide as the table needs, so that a log keeps every
    column unwrapped.
    """
    from rich.console import Console

    if sys.stdout.isatty():
        return Console()
    width = _columns_env() or PIPED_WIDTH
    if wide and table is not None:
        width = max(width, Console(width=10_000).measure(table).maximum)
    return Console(width=width)


def choose_columns(rows: Sequence[dict[str, Any]], columns: Sequence[tuple], wide_only: frozenset,
                   wide: bool) -> list[tuple]:
    """Every column with ``wide``; else those not in ``wide_only`` with something to show (not all "-")."""
    if wide:
        return list(columns)
    return [c for c in columns
            if c[0] not in wide_only and (not rows or any(r.get(c[0]) not in (None, "", "-") for r in rows))]


def fit_widths(natural: Sequence[int], narrowest: Sequence[int], available: int) -> list[int] | None:
    """Column widths (text only) that fit ``available``, or None where the natural widths fit already.

    The first column (the row's name: a kernel, a rung) gives way last, down to NAME_MIN characters:
    the others first shrink toward their narrowest (their longest word), in proportion to what each
    can give.
    """
    if sum(natural) <= available:
        return None
    widths = list(natural)
    excess = sum(natural) - available
    slack = [w - min(w, n) for w, n in zip(natural[1:], narrowest[1:])]
    if sum(slack):
        take = min(excess, sum(slack))
        cuts = [take * s // sum(slack) for s in slack]
        cuts[max(range(len(cuts)), key=slack.__getitem__)] += take - sum(cuts)  # the rounding, to the most slack
        widths[1:] = [w - c for w, c in zip(widths[1:], cuts)]
        excess -= take
    widths[0] = max(min(natural[0], NAME_MIN), natural[0] - excess)
    return widths


def print_rows(rows: Sequence[dict[str, Any]], columns: Sequence[tuple], title: str, wide_only=frozenset(),
               wide: bool = False, caption: str | None = None) -> None:
    """The rows as a table on stdout, sized to the terminal (see ``console_for``; ``fit_widths``)."""
    from .bench.report import render_table

    shown = choose_columns(rows, columns, wide_only, wide)
    table = render_table(rows, shown, title)
    table.caption, table.caption_justify = caption, "left"
    console = console_for(table, wide)
    cells = [[h, *(table.columns[i]._cells)] for i, (_k, h, _f) in enumerate(shown)]
    widths = fit_widths([max(len(str(c)) for c in col) for col in cells],
                        [max(len(w) for c in col for w in str(c).split() or [""]) for col in cells],
                        console.width - 3 * len(shown) - 1)  # each column: two spaces of padding and a border
    for col, w in zip(table.columns, widths or ()):
        col.width = w
    for col in table.columns:
        col.overflow = "fold"  # a word too long for its column continues on the next line, never cut
    console.print(table)


def human_bytes(n: int) -> str:
    """1234567 -> '1.2 MB' (decimal units, as disk tools report them)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


class BuildProgress:
    """Shows kernels being built on stderr: a progress bar on a terminal, a line every few seconds otherwise.

    Use as ``progress(done, total)`` (the callback of ``warmup.run_parallel``, which calls it with 0
    first) inside a ``with`` block. The display starts ``quiet_s`` after that first call unless the work
    has ended: a warm run (kernels from the disk cache) stays silent.
    """

    def __init__(self, what: str, quiet_s: float = 1.0, stream=None):
        self.what, self.quiet_s = what, quiet_s
        self.stream = stream or sys.stderr
        self.t0 = time.perf_counter()
        self.done = self.total = 0
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._bar = None
        self._task = None
        self._shown = False
        self._last_line = 0.0

    def __enter__(self) -> BuildProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __call__(self, done: int, total: int) -> None:
        with self._lock:
            self.done, self.total = done, total
            if self._timer is None:
                self._timer = threading.Timer(self.quiet_s, self._show)
                self._timer.daemon = True
                self._timer.start()
            elif self._shown:
                self._update()

    def _show(self) -> None:
        with self._lock:
            if self._shown or self._timer is None or self.done >= self.total:
                return
            self._shown = True
            if self.stream.isatty():
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

                self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), console=Console(file=self.stream), transient=True)
                self._task = self._bar.add_task(self.what, total=self.total, completed=self.done)
                self._bar.start()
            else:
                print(f"{self.what}: {self.total} kernels ...", file=self.stream, flush=True)
                self._last_line = time.perf_counter()

    def _update(self) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, total=self.total)
        elif time.perf_counter() - self._last_line >= LINE_EVERY_S and self.done < self.total:
            print(f"  {self.done}/{self.total}", file=self.stream, flush=True)
            self._last_line = time.perf_counter()

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._bar is not None:
                self._bar.stop()
                self._bar = None
            if self._shown:
                print(f"{self.what}: {self.total} kernels in {time.perf_counter() - self.t0:.1f} s",
                      file=self.stream, flush=True)
                self._shown = False
