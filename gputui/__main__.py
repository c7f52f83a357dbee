"""``python -m gputui`` and the ``gputui`` command: the command line run."""

from __future__ import annotations

import gc


def run() -> int:
    # The command line's modules load with the cyclic collector off: it ran 13 times while
    # they loaded (1.3 ms of a start users wait on) and found no cycle worth collecting in
    # what lives as long as the process. It is on again before any command runs (the app
    # turns it off for its own start: gputui.cli._start_without_collector).
    was_on = gc.isenabled()
    gc.disable()
    try:
        from gputui.cli import main
    finally:
        if was_on:
            gc.enable()
    return main()


if __name__ == "__main__":
    raise SystemExit(run())
