"""``python -m atrec`` runs the command line."""

from atrec.cli import main

if __name__ == "__main__":
    main()
