"""gputui inside a training job's own loop, each framework an optional extra:
``gputui.integrations.lightning`` (``gputui[lightning]``), ``gputui.integrations.transformers``
(``gputui[transformers]``); a plain loop needs none (``gputui.watch``). Importing this
package imports no framework."""
