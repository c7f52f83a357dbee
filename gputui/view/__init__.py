"""What the screen shows, without Textual: frames, history and findings in, typed panel
contents out (rows with keys, cells with a style role and a width priority), and the
layout that decides how many rows each panel gets. ``gputui.ui`` only paints and reacts."""
