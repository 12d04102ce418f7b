"""Regexes over the space-joined names of an operator sequence, run fast.

A pattern such as "silu mul" is written over the text of short names joined by spaces, and matches
whole names only. Scanning that text (tens of MB for a big window) costs seconds; so each distinct
word becomes one character and each pattern is rewritten over those characters: the same matches, on
a text as long as the number of words. A name that holds whitespace other than single inner spaces
(where a character scan could match part of it) sends its sequence to the character scan instead.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from canning_tb.util.arrays import distinct

_FIRST_CODE = 0x10000  # word characters: above the basic plane, so no surrogate and no regex syntax
# a pattern is rewritten when it is made of words, single spaces, (?: ), |, * and ?
_NOT_REWRITTEN_RE = re.compile(r"[.^$+\[\]{}\\]|[^\S ]|\((?!\?:)")
_WORD_RE = re.compile(r"(?<!\(\?)[^\s()|*?]+")  # the ':' of '(?:' is syntax, not a word
_PLAIN_RE = re.compile(r"\S+(?: \S+)*")


@dataclass
class Sequence:
    """One thread's operators as scannable text: `starts[i]` is where operator i begins in `text`
    (one entry more at the end); `words` maps a word to its character (None: a character scan)."""

    text: str
    starts: np.ndarray
    words: dict[str, str] | None

    def spans(self, regex: str) -> np.ndarray:
        """(first operator, operator after the last) of each match of `regex`, leftmost first."""
        if self.words is None:
            rx = re.compile(r"(?<!\S)" + regex + r"(?!\S)")
        elif not _NOT_REWRITTEN_RE.search(regex):
            rx = re.compile(_WORD_RE.sub(lambda m: self._word(m.group(0)), regex).replace(" ", ""))
        else:
            raise ValueError(f"not a pattern of words: {regex!r}")
        chars = np.array([m.span() for m in rx.finditer(self.text)], np.int64).reshape(-1, 2)
        return np.searchsorted(self.starts, chars)

    def _word(self, word: str) -> str:
        code = self.words.get(word)
        return re.escape(code) if code is not None else "(?!)"  # a word no operator has: no match


def sequences(names: list[str], threads: list[np.ndarray]) -> list[Sequence]:
    """Per thread (an array of ids into `names`; -1 for no name): its sequence, by words when every
    name the thread uses is plain (words separated by single spaces), else by characters."""
    names = list(names) + [""]  # id -1 takes the last
    used = distinct(np.concatenate(threads)) if threads else np.zeros(0, np.int64)
    plain = np.zeros(len(names), bool)
    coded = np.full(len(names), "", dtype=object)
    words: dict[str, str] = {}
    for name_id in used.tolist():
        if _PLAIN_RE.fullmatch(names[name_id]):
            plain[name_id], coded[name_id] = True, _encode(names[name_id], words)
    word_count = np.array([len(code) for code in coded], np.int64)
    by_chars = np.array(names, dtype=object)
    char_count = np.array([len(name) + 1 for name in names], np.int64)  # and the joining space
    out = []
    for ids in threads:
        if plain[ids].all():
            out.append(Sequence("".join(coded[ids].tolist()), np.r_[0, np.cumsum(word_count[ids])], words))
        else:
            out.append(Sequence(" ".join(by_chars[ids].tolist()), np.r_[0, np.cumsum(char_count[ids])], None))
    return out


def _encode(name: str, words: dict[str, str]) -> str:
    """The name as word characters, new words added to `words`."""
    out = []
    for word in name.split(" "):
        code = words.get(word)
        if code is None:
            code = words[word] = chr(_FIRST_CODE + len(words))
        out.append(code)
    return "".join(out)
