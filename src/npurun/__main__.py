"""`python -m npurun ...`: the `npurun` command (as `python -m npurun.cli`), for when its console script is not on PATH."""
from .cli import main

raise SystemExit(main())
