"""`make lab`'s pre-save hook (tools/dev/lab.py): a notebook is saved without the kernel's exact Python
version, and nothing else of it changes; other files are left alone."""

from __future__ import annotations

import copy
import json
import shutil

from tools.dev import lab
from tools.notebooks.notebook_form import LANGUAGE_INFO


def test_pre_save_drops_only_the_python_version():
    info = dict(LANGUAGE_INFO, version="3.12.4")
    content = {"cells": [{"cell_type": "code", "source": "x = 1.0", "metadata": {},
                          "outputs": [], "execution_count": 3}],
               "metadata": {"language_info": info, "widgets": {"x": 1.5}},
               "nbformat": 4, "nbformat_minor": 5}  # fmt: skip
    model = {"type": "notebook", "content": content}
    expected = copy.deepcopy(model)
    del expected["content"]["metadata"]["language_info"]["version"]
    lab.pre_save(model=model, path="notebooks/01_softmax.ipynb", contents_manager=None)
    assert model == expected
    assert model["content"]["metadata"]["language_info"] == LANGUAGE_INFO


def test_pre_save_leaves_other_files_alone():
    text = {"type": "file", "content": '{"metadata": {"language_info": {"version": "3"}}}'}
    before = copy.deepcopy(text)
    lab.pre_save(model=text, path="notes.json", contents_manager=None)
    assert text == before
    lab.pre_save(model={"type": "notebook", "content": None}, path="x.ipynb")  # no content


def test_the_private_config_registers_the_hook_and_the_settings():
    folder = lab.private_config_dir()
    try:
        server = json.loads((folder / "jupyter_server_config.json").read_text())
        assert server["ContentsManager"]["pre_save_hook"] == "tools.dev.lab.pre_save"
        overrides = json.loads(
            (folder / "labconfig" / "default_setting_overrides.json").read_text()
        )
        assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"
    finally:
        shutil.rmtree(folder)


def test_notebooks_are_served_with_the_kernels_python_version_and_saved_without():
    """An unrun lecture opens without the unsaved dot: JupyterLab finds the version its kernel
    reports already there (tools/dev/lab_contents.py); the pre-save hook takes it out again."""
    from tools.dev.lab_contents import with_kernel_version

    content = {"cells": [], "metadata": {"language_info": dict(LANGUAGE_INFO)},
               "nbformat": 4, "nbformat_minor": 5}  # fmt: skip
    model = {"type": "notebook", "content": content}
    with_kernel_version(model, "3.11.7")
    assert model["content"]["metadata"]["language_info"] == dict(LANGUAGE_INFO, version="3.11.7")
    with_kernel_version(model, "3.12.0")  # a version the file has is kept
    assert model["content"]["metadata"]["language_info"]["version"] == "3.11.7"
    lab.pre_save(model=model, path="notebooks/01_softmax.ipynb")
    assert model["content"]["metadata"]["language_info"] == LANGUAGE_INFO
    for other in (
        {"type": "file", "content": "text"},
        {"type": "notebook", "content": None},  # listed without content
        {"type": "notebook", "content": {"metadata": {"language_info": {"name": "R"}}}},
    ):
        before = copy.deepcopy(other)
        assert with_kernel_version(other) == before


def test_the_private_config_serves_notebooks_with_the_course_contents_manager():
    folder = lab.private_config_dir()
    try:
        server = json.loads((folder / "jupyter_server_config.json").read_text())
        name = server["ServerApp"]["contents_manager_class"]
        module, _, cls = name.rpartition(".")
        from importlib import import_module

        from jupyter_server.services.contents.manager import AsyncContentsManager

        assert issubclass(getattr(import_module(module), cls), AsyncContentsManager)
    finally:
        shutil.rmtree(folder)
