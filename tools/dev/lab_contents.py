"""The contents manager of `make lab`'s server (tools/dev/lab.py): an unrun lecture opens clean.

When JupyterLab opens a notebook it writes the kernel's ``language_info`` into it, and marks the
tab modified (the unsaved dot) if that differs from what the file holds. The lectures are stored
without the kernel's exact Python version (``language_info.version``: it differs from machine
to machine, and `make lab`'s pre-save hook leaves it out of every save). So this manager serves
a notebook with the version its kernel will report, that of the Python running the server, which
is the one the ``python3`` kernel runs: JupyterLab then finds nothing to change, and a lecture
opened and not run shows no unsaved dot. Saved notebooks still lose the version
(:func:`tools.dev.lab.pre_save`), so the files on disk are as before.
"""

from __future__ import annotations

import platform

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

__all__ = ["CourseContentsManager", "with_kernel_version"]


def with_kernel_version(model: dict, version: str | None = None) -> dict:
    """``model`` (a contents model) with ``version`` (default: this Python's) in a Python
    notebook's ``language_info`` where the file has none; anything else is left alone."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return model
    info = model["content"].get("metadata", {}).get("language_info")
    if isinstance(info, dict) and info.get("name") == "python" and "version" not in info:
        info["version"] = version or platform.python_version()
    return model


class CourseContentsManager(AsyncLargeFileManager):
    """Jupyter's default contents manager, serving notebooks :func:`with_kernel_version`."""

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        return with_kernel_version(model)
