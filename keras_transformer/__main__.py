"""`python -m keras_transformer ...`: the same as the `keras-transformer` command."""

import sys

from keras_transformer.cli import main

if __name__ == "__main__":
    sys.exit(main())
