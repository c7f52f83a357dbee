"""Sources: each yields one immutable Frame per tick (see base.Source)."""
