"""`python -m npurun.cli ...`: the `npurun` command, for when its console script is not on PATH."""
from . import main

raise SystemExit(main())
