"""course_lib.show_source: the listing is the file's own text, docstrings dropped on request."""

from pathlib import Path

import pytest

from course_lib import SourceListing, show_source
from course_lib.models import AttentionSeq2SeqGRU


def sample(x: int) -> int:
    """A docstring
    over two lines."""
    y = x + 1  # a comment stays
    return y


class Sample:
    """Class docstring."""

    def method(self):
        """Method docstring."""
        return 1


def test_listing_is_the_file_text():
    lines = Path(__file__).read_text().splitlines()
    first = sample.__code__.co_firstlineno - 1
    expected = "\n".join(lines[first : first + 5])
    got = show_source(sample).text
    assert got == f"# {__name__}: sample\n{expected}"


def test_docstrings_dropped_by_hand():
    assert show_source(sample, docstring=False).text == (
        f"# {__name__}: sample\n"
        "def sample(x: int) -> int:\n"
        "    y = x + 1  # a comment stays\n"
        "    return y"
    )
    got = show_source(Sample, docstring=False).text.splitlines()[1:]
    assert got == ["class Sample:", "", "    def method(self):", "        return 1"]


def test_method_is_dedented_and_headed_by_its_file():
    text = show_source(AttentionSeq2SeqGRU.decode).text
    header, first = text.splitlines()[:2]
    assert header == "# course_lib/models/seq2seq.py: AttentionSeq2SeqGRU.decode"
    assert first.startswith("def decode(")


def test_several_objects_and_markdown():
    listing = show_source(sample, Sample.method)
    assert isinstance(listing, SourceListing)
    assert listing.text.count("\n\n# ") == 1  # one blank line between the two listings
    md = listing._repr_markdown_()
    assert md.startswith("```python\n# ") and md.endswith("\n```")
    assert str(listing) == repr(listing) == listing.text


@pytest.mark.parametrize("bad", [3, "sample", None])
def test_refuses_what_has_no_source(bad):
    with pytest.raises(TypeError, match="function, method or class"):
        show_source(bad)


def test_refuses_no_argument_and_bad_flag():
    with pytest.raises(TypeError, match="at least one"):
        show_source()
    with pytest.raises(TypeError, match="docstring must be True or False"):
        show_source(sample, docstring="no")


def test_refuses_builtin():
    with pytest.raises((TypeError, ValueError)):
        show_source(len)
