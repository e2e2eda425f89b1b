"""Ticket text as features: signed feature hashing of its words (see :class:`TextHasher`)."""

from __future__ import annotations

import math
import operator
import re
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
        # ASCII pieces: the slot of a piece that is one token, else a list of its tokens' slots
        self._pieces: dict[bytes, tuple[int, int] | list[tuple[int, int]]] = {}

    def __call__(self, text: str) -> list[float]:
        # In UTF-8, bytes 0x30-0x39 are only ever ASCII digits, which the tokenizer treats alike.
        key = text.encode("utf-8", "surrogatepass").translate(_DIGITS_TO_ZERO)
        features = self._texts.get(key)
        if features is None:
            if len(self._texts) >= _TEXT_CACHE_LIMIT:
                self._texts.clear()
            features = self._texts[key] = tuple(self._hash(text) if self.chars is None else self._hash_grams(text))
        return list(features)

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
        slots = self._slots
        if len(slots) >= _TOKEN_CACHE_LIMIT or len(self._pieces) >= _TOKEN_CACHE_LIMIT:
            slots.clear()
            self._pieces.clear()
        counts = [0] * self.n
        if text.isascii():
            # Split at every character no token holds, with digits folded to 0 (numbers are one
            # token): a piece's tokens are then the same as in the text, and pieces repeat.
            pieces = self._pieces
            for piece in text.encode("ascii").lower().translate(_SEPARATE).split():
                slot = pieces.get(piece)
                if slot is None:
                    slot = pieces[piece] = self._piece(piece)
                if isinstance(slot, tuple):
                    counts[slot[0]] += slot[1]
                else:  # several tokens
                    for index, sign in slot:
                        counts[index] += sign
        else:
            for word in _WORD.findall(text.lower()):
                index, sign = slots.get(word) or self._slot(word)
                counts[index] += sign
        # Whole numbers: the sum of squares is exact, and so is each count's conversion to float.
        norm = math.sqrt(sum(map(operator.mul, counts, counts))) or 1.0
        return [c / norm for c in counts]

    def _piece(self, piece: bytes) -> tuple[int, int] | list[tuple[int, int]]:
        """The slot of a piece that is one token, else the slots of its tokens."""
        slots = self._slots
        words = _WORD.findall(piece.decode("ascii"))
        found = [slots.get(word) or self._slot(word) for word in words]
        return found[0] if len(words) == 1 and len(words[0]) == len(piece) else found

    def _slot(self, word: str) -> tuple[int, int]:
        h = zlib.crc32(b"0" if word[0].isdigit() else word.encode())
        slot = self._slots[word] = (h % self.n, 1 if h & 0x80000000 else -1)
        return slot
