"""Loading the text rows need: the text source shared by the writing threads, and a cache of
recently used versions' text, scrubbed prompts and parsed bundles."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from feedback import rewards
from feedback.export.compact import ParsedBundle, parse
from feedback.export.inputs import Comment, TextSource
from feedback.rewards import VersionText
from feedback.scrub import Scrubber


class LockedTexts:
    """One text source shared by two threads: a database session is not thread-safe."""

    def __init__(self, texts: TextSource) -> None:
        self.texts, self.lock = texts, threading.Lock()

    def versions(self, version_ids: Sequence[int]) -> dict[int, VersionText]:
        with self.lock:
            return self.texts.versions(version_ids)

    def comments(self, feedback_ids: Sequence[int]) -> dict[int, Comment]:
        with self.lock:
            return self.texts.comments(feedback_ids)

    def comment_scrubber(self) -> Scrubber:
        with self.lock:
            return self.texts.comment_scrubber()


# What the parsed bundles of the most recently used versions may hold. At ten million ratings
# (bench/export.py, alternated runs) 128 MiB exports as fast as holding every version's parsed
# bundle, which took the export's peak past 2 GiB; 64 MiB was a fifth slower (co-rated pairs
# reach across every group, so the versions in use are many).
BUNDLE_BUDGET = 128 * 1024 * 1024


class TextCache:
    """The most recently used versions' text, up to ``budget`` bytes, and their parsed
    bundles, up to ``bundle_budget``: a version shows up in its scalar row and then in several
    pairs, and loading it (a database read and a decompression) or parsing it costs more than
    keeping it."""

    def __init__(
        self,
        source,
        version_id: np.ndarray,
        budget: int = 64 * 1024 * 1024,
        bundle_budget: int = BUNDLE_BUDGET,
    ) -> None:
        self.source, self.version_id, self.budget = source, version_id, budget
        self.bundle_budget = bundle_budget
        self.entries: OrderedDict[int, VersionText] = OrderedDict()
        self.size = 0
        self.scrubber = Scrubber()
        self.prompts: dict[int, str] = {}
        self.bundles: OrderedDict[int, ParsedBundle] = OrderedDict()
        self.bundles_size = 0

    def prompt(self, version_id: int) -> str:
        """The version's own prompt, scrubbed (prompts quote people's fork requests)."""
        prompt = self.prompts.get(version_id)
        if prompt is None:
            prompt = self.scrubber.scrub(rewards.version_prompt(self.entries[version_id]))
            self.prompts[version_id] = prompt
        return prompt

    def bundle(self, version_id: int, completion: str) -> ParsedBundle:
        """``completion`` (the version's) parsed for compact views: once, however many pairs
        the version is in while it stays among the most recently used (``bundle_budget``,
        counted in what the parsed bundles hold: ``ParsedBundle.size``)."""
        bundle = self.bundles.get(version_id)
        if bundle is not None:
            self.bundles.move_to_end(version_id)
            return bundle
        bundle = self.bundles[version_id] = parse(completion)
        self.bundles_size += bundle.size
        while self.bundles_size > self.bundle_budget and len(self.bundles) > 1:
            _old_id, old = self.bundles.popitem(last=False)
            self.bundles_size -= old.size
        return bundle

    def get(self, nodes: np.ndarray) -> dict[int, VersionText]:
        wanted = [int(v) for v in self.version_id[nodes]]
        missing = [v for v in wanted if v not in self.entries]
        loaded = self.source.versions(missing) if missing else {}
        out = {}
        for vid in wanted:
            text = self.entries.get(vid)
            if text is None:
                text = loaded.get(vid)
                if text is None:
                    continue
                self.entries[vid] = text
                self.size += len(text.completion) + 256
            else:
                self.entries.move_to_end(vid)
            out[vid] = text
        while self.size > self.budget and len(self.entries) > len(out):
            old_id, old = self.entries.popitem(last=False)
            self.prompts.pop(old_id, None)
            self.size -= len(old.completion) + 256
        return out
