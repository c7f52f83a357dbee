"""What the app is built from: one typed context, put together by the composition root
(``launch.py``), so that nothing is set on an app after it is built."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gputui.core.process_access import ProcessAccess
from gputui.core.records import frozen
from gputui.sampling.monitor import Monitor
from gputui.sampling.sampler import Sampler

if TYPE_CHECKING:
    from gputui.sampling.replay_control import ReplayController


@frozen
class AppParts:
    monitor: Monitor
    #: reads the source off the UI thread; None: the caller feeds frames (tests, the demo)
    sampler: Sampler | None = None
    #: a recording's controls (step, seek, speed); None for a live source
    replay: ReplayController | None = None
    #: a replay's first moment to show
    start_at: float | None = None
    #: what to tell the user once the screen is up (a replay's --start past its end)
    notices: tuple[str, ...] = ()
    snapshot_dir: Path = Path(".")
    #: files the app writes keep credentials in command lines (--keep-secrets)
    keep_secrets: bool = False
    #: draw with ASCII only; None: as the terminal and locale say
    ascii: bool | None = None
    #: the app owns the process (the CLI's): it freezes the startup heap and ends on
    #: SIGTERM, SIGHUP and SIGINT as ``q`` does; tests run many apps in one process
    owns_process: bool = False
    #: this machine's processes, to look into and signal; None where the processes shown
    #: are not this machine's (a demo, a recording, a remote node)
    process_access: ProcessAccess | None = None
    #: --readonly: no signal is sent from this screen (its access refuses them all)
    readonly: bool = False
    #: the theme it starts in (config.THEMES: dark, light); b switches
    theme: str = "dark"
