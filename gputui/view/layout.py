"""Where the panels go: terminal size and content in, the size of every panel out.

Pure, so the app lays out with the size it is being given (a resize event's), and every
size can be tested without a terminal. Sizes are outer: a panel spends one row on its
titled top border and two columns on its padding."""

from __future__ import annotations

from gputui.core.records import frozen

SIDE_BY_SIDE = 110  # narrower: the GPU list sits above the detail
BOTTOM_SIDE_BY_SIDE = 150  # narrower: the advisor sits above the processes
GPU_LIST_WIDTH = 56
HOST_MIN_HEIGHT = 20  # shorter terminals give the host line to the GPU list
DETAIL_WANTS = 19  # border, nine readings, the history heading and its seven lines
DETAIL_READINGS = 11  # border, the readings and the identity, without the history
# The least a panel gets: a title and a few rows, so nothing vanishes.
DETAIL_MIN, ADVISOR_MIN, PROCS_MIN = 5, 3, 3


@frozen
class Box:
    width: int
    height: int

    @property
    def inner(self) -> tuple[int, int]:
        """Content columns and rows: without the border row and the padding."""
        return max(0, self.width - 2), max(0, self.height - 1)


@frozen
class Layout:
    width: int
    height: int
    host: bool  # the host line under the header
    stacked: bool  # the GPU list above the detail (narrow terminals)
    bottom_stacked: bool  # the advisor above the processes
    gpus: Box
    detail: Box
    advisor: Box
    procs: Box
    overview: Box


@frozen
class Place:
    """Where a panel goes on the screen: its top-left cell and its outer size."""

    x: int
    y: int
    box: Box


def places(laid: Layout, top: int = 1) -> dict[str, Place]:
    """Every panel's place under ``top`` rows (the header): the host line, then the GPU
    list beside (or above) the detail, then the advisor beside (or above) the processes;
    the overview takes the rows of all four."""
    out: dict[str, Place] = {}
    if laid.host:
        out["host"] = Place(0, top, Box(laid.width, 1))
        top += 1
    out["overview"] = Place(0, top, laid.overview)
    out["gpus"] = Place(0, top, laid.gpus)
    if laid.stacked:
        out["detail"] = Place(0, top + laid.gpus.height, laid.detail)
        top += laid.gpus.height + laid.detail.height
    else:
        out["detail"] = Place(laid.gpus.width, top, laid.detail)
        top += laid.gpus.height
    out["advisor"] = Place(0, top, laid.advisor)
    if laid.bottom_stacked:
        out["procs"] = Place(0, top + laid.advisor.height, laid.procs)
    else:
        out["procs"] = Place(laid.advisor.width, top, laid.procs)
    return out


def layout(
    width: int,
    height: int,
    gpu_lines: int,
    findings: int,
    host: bool,
    critical: int = 0,
    processes: int = 1,
) -> Layout:
    """``gpu_lines``: the GPU list's rows (GPUs and node headings), ``findings`` how many
    the advisor lists and ``critical`` how many of them are critical (they are never cut:
    the advisor gets a line for each, and one to count the rest), ``host`` whether the
    source has host readings, ``processes`` how many the process table would list (rows
    it cannot use go to the advisor)."""
    gpus_want = gpu_lines + 2  # border and column headers
    advisor_want = 2 + max(3, 3 * findings + 6) if findings else 5
    advisor_min = max(ADVISOR_MIN, 1 + critical + (1 if findings > critical else 0))
    # The host line goes first when the rest would not get their least with it.
    least = gpus_want + DETAIL_MIN + advisor_min + PROCS_MIN
    side = width >= SIDE_BY_SIDE
    show_host = host and height >= HOST_MIN_HEIGHT and (side or height - 3 >= least)
    rows = max(4, height - 2 - (1 if show_host else 0))  # header, footer, host line
    overview = Box(width, rows)
    if side:
        top = min(max(gpus_want, DETAIL_WANTS), max(8, rows - advisor_min - PROCS_MIN - 4))
        gpu_width = min(GPU_LIST_WIDTH, width // 2)
        bottom = rows - top
        if width >= BOTTOM_SIDE_BY_SIDE:
            advisor_width = width // 2
            return Layout(
                width, height, show_host, False, False,
                Box(gpu_width, top), Box(width - gpu_width, top),
                Box(advisor_width, bottom), Box(width - advisor_width, bottom), overview,
            )  # fmt: skip
        procs_least = max(PROCS_MIN, min(bottom * 2 // 5, processes + 2))
        advisor = _share(bottom, advisor_want, advisor_min, procs_least)
        return Layout(
            width, height, show_host, False, True,
            Box(gpu_width, top), Box(width - gpu_width, top),
            Box(width, advisor), Box(width, bottom - advisor), overview,
        )  # fmt: skip
    # Stacked: every GPU gets its line first (8 GPUs fit 80x24), then each panel its
    # least, then the detail what it wants, and the advisor and processes the rest.
    gpus = max(3, min(gpus_want, rows - DETAIL_MIN - advisor_min - PROCS_MIN))
    left = rows - gpus
    detail = max(min(DETAIL_MIN, left), min(DETAIL_READINGS, left - advisor_min - PROCS_MIN))
    left -= detail
    advisor = _share(
        left, advisor_want, advisor_min, max(PROCS_MIN, min(left * 2 // 5, processes + 2))
    )
    spare = max(0, left - advisor - 2 * PROCS_MIN - 4)  # the processes keep a few lines
    grow = min(spare, DETAIL_WANTS - detail)
    detail += grow
    left -= grow
    return Layout(
        width, height, show_host, True, True,
        Box(width, gpus), Box(width, detail), Box(width, advisor), Box(width, left - advisor),
        overview,
    )  # fmt: skip


def _share(rows: int, first_wants: int, first_min: int, second_min: int) -> int:
    """The first panel's rows of ``rows`` shared with a second: what it wants, at most
    three fifths, never less than its least and never taking the second's least."""
    wanted = max(first_min, rows - second_min) if first_wants >= rows else first_wants
    wanted = min(wanted, max(first_min, rows - second_min))
    return max(min(first_min, rows), min(wanted, rows - second_min))
