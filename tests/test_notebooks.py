"""The notebooks in notebooks/ execute without error (nbclient, python3 kernel).

Each notebook is generated from notebooks/src/<name>.py by notebooks/build_notebooks.py and
committed without outputs; these tests check both, then run every notebook in a fresh
kernel with matplotlib's Agg backend (any cell error fails the test; the notebooks assert
their own results). Marked `notebooks` (deselect with -m "not notebooks"); the whole
file takes about 40 s (the solver-sensitivities notebook about half of it).
"""
import importlib.util
import os
import pathlib

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")
pytest.importorskip("scipy")

pytestmark = pytest.mark.notebooks

ROOT = pathlib.Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(p.stem for p in NB_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 120  # seconds; every cell takes well under 5 s


def _builder():
    spec = importlib.util.spec_from_file_location("build_notebooks",
                                                  NB_DIR / "build_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_notebooks_are_built_from_their_sources():
    builder = _builder()
    targets = builder.targets()
    assert sorted(nb.stem for _, nb in targets) == NOTEBOOKS, \
        "every notebook has a source in notebooks/src and vice versa"
    assert len(NOTEBOOKS) >= 5
    for src, nb_path in targets:
        assert nb_path.read_text() == builder.render(src), \
            f"{nb_path.name} is out of date: run python notebooks/build_notebooks.py"


def test_committed_notebooks_have_no_outputs():
    for name in NOTEBOOKS:
        nb = nbformat.read(NB_DIR / f"{name}.ipynb", as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code, name
        assert all(c.outputs == [] and c.execution_count is None for c in code), name


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_executes(name, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    # the kernel imports this checkout's vecjac, whatever is installed
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    # the suite already keeps the cores busy: a multi-threaded BLAS would only contend
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    nb = nbformat.read(NB_DIR / f"{name}.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                                     resources={"metadata": {"path": str(NB_DIR)}})
    client.execute()  # raises CellExecutionError, with the cell's traceback, on any error
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
    assert sum(c.execution_count is not None for c in nb.cells if c.cell_type == "code") \
        == sum(c.cell_type == "code" for c in nb.cells)
