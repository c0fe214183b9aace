"`python -m course.exercises`: check the exercises of the saved notebooks (see `course.exercises`)."
import sys

from . import main

sys.exit(main())
