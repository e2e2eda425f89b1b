"""Ticket text as features: signed feature hashing of its words (see :class:`TextHasher`)."""

from __future__ import annotations

import math
import re
import struct
import zlib
from typing import Final

_WORD: Final = re.compile(r"[a-z]+(?:'[a-z]+)?|[0-9]+")
_TOKEN_CACHE_LIMIT: Final = 200_000
_TEXT_CACHE_LIMIT: Final = 16_384  # texts' features kept (about 0.6 kB each)
_DIGITS_TO_ZERO: Final = bytes.maketrans(b"123456789", b"000000000")
# Bytes no token holds (everything but a-z, 0-9 and the apostrophe) become spaces, digits 0.
_SEPARATE: Final = bytes(
    48 if 48 <= c <= 57 else c if re.fullmatch(rb"[a-z']", bytes([c])) else 32 for c in range(256)
)

# Lower-case ASCII text to sentences: digits become 0, and . ! ? and line breaks all become "." (none
# of them is part of a token, so a sentence's tokens are the text's).
_SENTENCES: Final = bytes(48 if 48 <= c <= 57 else 46 if c in b".!?\n\r" else c for c in range(256))


def _key(text: str) -> bytes:
    """A text's cache key: its UTF-8 bytes with every digit 0 (in UTF-8, bytes 0x30-0x39 are only ever
    ASCII digits, which the tokenizer treats alike)."""
    return text.encode("utf-8", "surrogatepass").translate(_DIGITS_TO_ZERO)


class TextHasher:
    """Signed feature hashing of a ticket's words into ``n`` features, L2-normalised (values in [-1, 1]).

    Words are lower-cased; every number becomes the same token, so order ids and amounts do not
    scatter the vector. The hash is CRC-32, stable across processes (Python's ``hash`` is salted).
    Texts that differ only in their digits have the same features, so they are computed once.

    With ``chars=(low, high)`` each word's character n-grams (of the word padded with a space each
    side, ``low`` to ``high`` long) are hashed too, into the same ``n`` features: an unseen word then
    shares most of its grams with the words it resembles (``refunded`` with ``refund``). Words and
    grams are each normalised, counts taken sublinearly (``1 + log(count)``), then added and the sum
    normalised: words and grams weigh alike whatever the number of grams.
    """

    def __init__(self, n: int, chars: tuple[int, int] | None = None) -> None:
        self.n = n
        self.chars = chars
        self._grams: dict[str, list[tuple[int, float]]] = {}
        self._slots: dict[str, tuple[int, int]] = {}  # word -> (feature, sign +1 or -1)
        self._texts: dict[bytes, tuple[float, ...]] = {}
        self._packed: dict[bytes, bytes] = {}  # the features as float32 bytes (:meth:`packed`)
        self._pack = struct.Struct(f"{n}f").pack
        self._pieces: dict[bytes, tuple[int, ...]] = {}  # an ASCII piece -> feature, sign, ... of its tokens
        self._sentences: dict[bytes, tuple[int, ...]] = {}  # lower-case ASCII sentence -> features, counts

    def __call__(self, text: str) -> list[float]:
        key = _key(text)
        features = self._texts.get(key)
        if features is None:
            if len(self._texts) >= _TEXT_CACHE_LIMIT:
                self._texts.clear()
            features = self._texts[key] = tuple(self._features(text))
        return list(features)

    def packed(self, text: str) -> bytes:
        """The features of ``text`` as ``n`` native float32 values (``struct`` format ``f``), as an
        observation holds them: the same numbers as ``self(text)``, rounded to float32."""
        key = _key(text)
        packed = self._packed.get(key)
        if packed is None:
            if len(self._packed) >= _TEXT_CACHE_LIMIT:
                self._packed.clear()
            packed = self._packed[key] = self._pack(*self._features(text))
        return packed

    def _features(self, text: str) -> list[float]:
        return self._hash(text) if self.chars is None else self._hash_grams(text)

    def _hash_grams(self, text: str) -> list[float]:
        """Words and their character n-grams (class docstring)."""
        grams = self._grams
        if len(grams) >= _TOKEN_CACHE_LIMIT:
            grams.clear()
        words: dict[tuple[int, float], int] = {}
        pieces: dict[tuple[int, float], int] = {}
        for word in _WORD.findall(text.lower()):
            word = "0" if word[0].isdigit() else word
            found = grams.get(word)
            if found is None:
                found = grams[word] = self._grams_of(word)
            words[found[0]] = words.get(found[0], 0) + 1
            for slot in found[1:]:
                pieces[slot] = pieces.get(slot, 0) + 1
        vector = [0.0] * self.n
        for counts in (words, pieces):
            part = [0.0] * self.n
            for (index, sign), count in counts.items():
                part[index] += sign * (1.0 + math.log(count))
            norm = math.sqrt(sum(v * v for v in part)) or 1.0
            for i, v in enumerate(part):
                if v:
                    vector[i] += v / norm
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    def _grams_of(self, word: str) -> list[tuple[int, float]]:
        """The word's own slot, then its character n-grams' (``chars`` long, the word space-padded)."""
        assert self.chars is not None
        low, high = self.chars
        padded = f" {word} "
        slots = [self._slot_of(word)]
        for size in range(low, high + 1):
            slots += [self._slot_of("#" + padded[i:i + size]) for i in range(len(padded) - size + 1)]
        return slots

    def _slot_of(self, token: str) -> tuple[int, float]:
        h = zlib.crc32(token.encode())
        return h % self.n, 1.0 if h & 0x80000000 else -1.0

    def _hash(self, text: str) -> list[float]:
        slots, sentences = self._slots, self._sentences
        if len(slots) >= _TOKEN_CACHE_LIMIT or len(sentences) + len(self._pieces) >= _TOKEN_CACHE_LIMIT:
            slots.clear()
            sentences.clear()
            self._pieces.clear()
        counts = [0] * self.n
        if text.isascii():
            # Sentences (cut at . ! ? and line breaks, which no token holds) repeat across tickets far
            # more than whole texts do: each one's counts are worked out once.
            for sentence in text.encode("ascii").lower().translate(_SENTENCES).split(b"."):
                found = sentences.get(sentence)
                if found is None:
                    found = sentences[sentence] = self._sentence(sentence)
                for k in range(0, len(found), 2):
                    index = found[k]
                    counts[index] = counts[index] + found[k + 1]
        else:
            for word in _WORD.findall(text.lower()):
                index, sign = slots.get(word) or self._slot(word)
                counts[index] = counts[index] + sign
        # Whole numbers: the sum of squares is exact, and so is each count's conversion to float.
        total = 0
        for count in counts:
            total += count * count
        norm = math.sqrt(total) or 1.0
        return [c / norm for c in counts]

    def _sentence(self, sentence: bytes) -> tuple[int, ...]:
        """Feature, sign, feature, sign, ... of a lower-case ASCII sentence's tokens, in their order.
        One flat tuple of numbers: the collector stops tracking it, so a full cache costs its passes
        nothing."""
        pieces = self._pieces
        flat: list[int] = []
        # Split at every character no token holds, with digits folded to 0 (numbers are one token): a
        # piece's tokens are then the same as in the text, and pieces repeat across sentences.
        for piece in sentence.translate(_SEPARATE).split():
            found = pieces.get(piece)
            if found is None:
                found = pieces[piece] = self._piece(piece)
            flat.extend(found)
        return tuple(flat)

    def _piece(self, piece: bytes) -> tuple[int, ...]:
        """Feature, sign, ... of a piece's tokens."""
        slots = self._slots
        flat: list[int] = []
        for word in _WORD.findall(piece.decode("ascii")):
            flat.extend(slots.get(word) or self._slot(word))
        return tuple(flat)

    def _slot(self, word: str) -> tuple[int, int]:
        h = zlib.crc32(b"0" if word[0].isdigit() else word.encode())
        slot = self._slots[word] = (h % self.n, 1 if h & 0x80000000 else -1)
        return slot
