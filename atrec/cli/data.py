"""``atrec download`` and ``atrec preprocess``: get a dataset and turn it into atrec's store."""

from __future__ import annotations

import click

from atrec.cli.app import FORMATS, friendly_errors, main
from atrec.data.datastats import data_stats, stats_rows
from atrec.data.download import download_many
from atrec.data.preprocess import preprocess_many
from atrec.paths import require_writable
from atrec.reporting.tables import render


@main.command("download")
@click.argument("name")
@click.option("--source", type=click.Path(path_type=str), default=None,
              help="Use this local copy instead of the official URL: an archive (.zip, .tar.gz, "
                   ".tgz), a folder, or a single file. Default: the copy ATREC_<NAME>_SOURCE "
                   "names (ATREC_COAT_SOURCE, ATREC_ML_100K_SOURCE), else the official URL.")
@click.option("--force", is_flag=True, help="Fetch and verify again even if a valid copy is there.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no closing message.")
@friendly_errors
def download(name: str, source: str | None, force: bool, quiet: bool) -> None:
    """Fetch dataset NAME, verify its SHA-256 and install it under the data folder.

    NAME is coat, ml-100k, yahoo, or all (= coat and ml-100k, plus yahoo if it is already
    installed). Yahoo! R3 is licensed per user and never downloaded: request it from Yahoo!
    Webscope, then run 'atrec download yahoo --source PATH' (PATH: the archive, or a folder
    holding the two .txt files). Data folder: ./data or $ATREC_DATA_DIR.
    """
    require_writable("data")

    for result in download_many(name, source=source, quiet=quiet, force=force):
        if not quiet:
            click.echo(result.message)


@main.command("preprocess")
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Output format of the statistics table.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
@friendly_errors
def preprocess(name: str, fmt: str, quiet: bool) -> None:
    """Parse the downloaded dataset NAME into atrec's binary store and print its statistics.

    NAME is coat, ml-100k, yahoo, or all (= coat and ml-100k, plus yahoo if installed). The
    table gives users, items, ratings, sparsity (train ratings / (users x items)), mean rating
    of train and test, and KL(train || test) of the rating shares.
    """
    require_writable("data")
    rows = stats_rows([data_stats(d) for d in preprocess_many(name, quiet=quiet)])
    click.echo(render(rows, fmt))


