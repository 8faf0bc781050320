"""`python -m matbench` (and `torchrun -m matbench`, `accelerate launch -m matbench`)."""

import sys

from matbench.cli import main

sys.exit(main())
