"""Text that no tokenizer, encoder or JSON writer can take: lone UTF-16 surrogates, NUL and the Unicode
non-characters.

They arrive where text is decoded leniently: a JSON body's ``"\\ud800"`` escape or raw bytes ``ED A0 80``
(Python's JSON reader decodes bytes with ``surrogatepass``), a command-line argument with invalid UTF-8
(Python decodes ``argv`` with ``surrogateescape``), a file or dump read the same way. Encoding such a string as
UTF-8 fails (``UnicodeEncodeError``), and so does every tokenizer that does it first.

Two ways of dealing with them, one per boundary:

- what a person or a program asks (a query, a question, an id): :func:`check_readable` refuses it with
  :class:`UnreadableTextError`, naming the field, the character and where it stands;
- what is ingested (a statement, its proof, a title): :func:`readable` cleans it up, documented in the
  README: a lone surrogate becomes U+FFFD (the replacement character), NUL and non-characters are dropped.
  Nothing of a paper is lost for one bad character, and every record the index holds can be encoded.
"""

from __future__ import annotations

import re

# Lone surrogates, NUL, U+FFFE/U+FFFF of every plane and U+FDD0..U+FDEF (the non-characters).
_UNREADABLE = re.compile(
    "[\ud800-\udfff\x00\ufdd0-\ufdef\ufffe\uffff"
    + "".join(f"{chr(plane * 0x10000 + 0xFFFE)}{chr(plane * 0x10000 + 0xFFFF)}" for plane in range(1, 17))
    + "]"
)
_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_DROPPED = re.compile(_UNREADABLE.pattern.replace("\ud800-\udfff", ""))


class UnreadableTextError(ValueError):
    """Text with a character no encoder can read (a lone surrogate, NUL, a non-character), with the field it
    came in, the character and its place."""

    def __init__(self, field: str, character: str, position: int) -> None:
        self.field, self.character, self.position = field, character, position
        what = "a lone UTF-16 surrogate" if _SURROGATE.match(character) else (
            "a NUL character" if character == "\x00" else "a Unicode non-character"
        )  # fmt: skip
        super().__init__(
            f"{field} holds {what} (U+{ord(character):04X}) at character {position + 1}, which no encoder can "
            "read: send the text as valid UTF-8 (an invalid byte sequence or a '\\ud800' escape makes one)"
        )


def unreadable_at(text: str) -> int | None:
    """Where the first unreadable character of ``text`` stands, or None."""
    if text.isascii() and "\x00" not in text:
        return None
    match = _UNREADABLE.search(text)
    return match.start() if match else None


def joined_pairs(text: str) -> str:
    """Surrogate pairs joined into the characters they encode: an emoji sent as CESU-8 (``ED A0 BD ED B8 80``)
    reads as two surrogates, which are one character; a lone one stays."""
    if not _SURROGATE.search(text):
        return text
    return _PAIR.sub(lambda m: m.group(0).encode("utf-16-le", "surrogatepass").decode("utf-16-le"), text)


class ReadableText(str):
    """A text :func:`check_readable` has read: checked once where it came in (the HTTP request), it is not read
    again by the layers below (the pipeline does not check again what the API checked)."""

    __slots__ = ()


def check_readable(text: str, field: str) -> ReadableText:
    """``text`` with its surrogate pairs joined (:func:`joined_pairs`), or :class:`UnreadableTextError` naming
    ``field`` where a character no encoder can read is left."""
    if isinstance(text, ReadableText):
        return text
    text = joined_pairs(text)
    position = unreadable_at(text)
    if position is not None:
        raise UnreadableTextError(field, text[position], position)
    return ReadableText(text)


def readable(text: str) -> str:
    """``text`` cleaned up for the index: lone surrogates as U+FFFD, NUL and non-characters dropped."""
    if unreadable_at(text) is None:
        return text
    text = joined_pairs(text)
    return _DROPPED.sub("", _SURROGATE.sub("\ufffd", text))
