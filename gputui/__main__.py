from gputui.cli import main

raise SystemExit(main())
