"""What a sub-agent's users asked for: feedback tags and comments grouped into themes.

1. Every feedback tag is a theme ("wants reminders", "too slow"); its count is the number of
   ratings carrying it.
2. A comment joins a tag theme: the tag its own rating carries that it is most like (the
   rater said what the comment is about), else the tag theme it shares most character
   n-grams with, if the cosine of their TF-IDF vectors reaches ``ATTACH_SIMILARITY``.
3. The remaining comments are clustered (agglomerative, average linkage on the cosine
   distance of TF-IDF over content words: Latin words of 3+ letters that are not filler, and
   character pairs in Chinese, Japanese and Korean), cut at ``CLUSTER_DISTANCE`` (0.9: two
   short comments that share one content word are about 0.15–0.25 alike, unrelated ones 0);
   a cluster of two or more is a theme labelled by its most weighted terms. Lone comments
   are counted in one "other comments" theme.
Themes come out largest first, each with a few example comments.

Character n-grams and character pairs make this work across languages without a segmenter.
The caller passes comments already scrubbed of contact details (``feedback.scrub``).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.cluster import AgglomerativeClustering
from sklearn.feature_extraction.text import TfidfVectorizer

ATTACH_SIMILARITY = 0.2
CLUSTER_DISTANCE = 0.9
EXAMPLE_CHARS = 280
OTHER_LABEL = "other comments"

_WORD = re.compile(r"\w+")
_DENSE = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af]+")
_LABEL_STOP_TEXT = (
    "and are but can could for from have just like more much not really should that the "
    "them then this too very was what when with would you your it's its i'd i'm"
)
_LABEL_STOP = frozenset(_LABEL_STOP_TEXT.split())


@dataclass(frozen=True)
class FeedbackNote:
    tags: tuple[str, ...] = ()
    comment: str | None = None


@dataclass(frozen=True)
class Theme:
    label: str
    kind: str  # tag | comments
    count: int
    examples: tuple[str, ...]


def label_terms(text: str) -> list[str]:
    """Words a theme can be named by: Latin words of 3+ letters (not filler), and character
    pairs of Chinese/Japanese/Korean runs."""
    text = unicodedata.normalize("NFKC", text).lower()
    terms = [
        w for w in _WORD.findall(_DENSE.sub(" ", text)) if len(w) >= 3 and w not in _LABEL_STOP
    ]
    for run in _DENSE.findall(text):
        terms.extend(run[i : i + 2] for i in range(max(1, len(run) - 1)))
    return terms


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXAMPLE_CHARS else text[: EXAMPLE_CHARS - 1] + "…"


def _label(comments: list[str]) -> str:
    """The terms most of the cluster shares (up to three), heaviest first."""
    vectorizer = TfidfVectorizer(analyzer=label_terms, sublinear_tf=True)
    try:
        matrix = vectorizer.fit_transform(comments)
    except ValueError:  # no usable words at all
        return OTHER_LABEL
    weights = np.asarray(matrix.sum(axis=0)).ravel()
    spread = np.asarray((matrix > 0).sum(axis=0)).ravel()
    names = vectorizer.get_feature_names_out()
    order = sorted(range(len(names)), key=lambda i: (-spread[i], -weights[i], names[i]))
    shared = [i for i in order if spread[i] >= 2][:3] or order[:2]
    return " / ".join(names[i] for i in shared)


def group_themes(
    notes: Sequence[FeedbackNote], *, max_themes: int = 6, examples: int = 3
) -> list[Theme]:
    """Themes of the notes (newest first: examples are taken in the order given)."""
    tag_count = Counter(tag for note in notes for tag in dict.fromkeys(note.tags))
    tags = sorted(tag_count)
    commented = [
        (note, _clip(note.comment)) for note in notes if note.comment and note.comment.strip()
    ]
    members: dict[str, list[str]] = {tag: [] for tag in tags}
    joined: Counter[str] = Counter()  # untagged ratings whose comment speaks to a tag theme
    loose: list[int] = []
    themes: list[Theme] = []
    if commented:
        vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), sublinear_tf=True)
        matrix = vectorizer.fit_transform([text for _, text in commented] + tags)
        comments, tag_vectors = matrix[: len(commented)], matrix[len(commented) :]
        similarity = (comments @ tag_vectors.T).toarray()
        for row, (note, text) in enumerate(commented):
            own = [tags.index(t) for t in dict.fromkeys(note.tags)]
            if own:
                best = max(own, key=lambda j: (similarity[row, j], -j))
            elif tags and similarity[row].max() >= ATTACH_SIMILARITY:
                best = int(np.argmax(similarity[row]))
                joined[tags[best]] += 1
            else:
                loose.append(row)
                continue
            members[tags[best]].append(text)
        themes.extend(_comment_themes([commented[i][1] for i in loose], examples))
    for tag in tags:
        shown = tuple(dict.fromkeys(members[tag]))[:examples]
        themes.append(Theme(tag, "tag", tag_count[tag] + joined[tag], shown))
    themes.sort(key=lambda t: (t.label == OTHER_LABEL, -t.count, t.label))
    return themes[:max_themes]


def _comment_themes(texts: list[str], examples: int) -> list[Theme]:
    """Cluster the comments no tag theme took; lone ones become one "other comments" theme."""
    groups: list[list[str]] = [[text] for text in texts]
    try:
        vectors = TfidfVectorizer(analyzer=label_terms, sublinear_tf=True).fit_transform(texts)
    except ValueError:  # not one content word among them
        vectors = None
    if len(texts) >= 2 and vectors is not None:
        distances = np.clip(1.0 - (vectors @ vectors.T).toarray(), 0.0, None)
        np.fill_diagonal(distances, 0.0)
        labels = (
            AgglomerativeClustering(
                n_clusters=None,
                metric="precomputed",
                linkage="average",
                distance_threshold=CLUSTER_DISTANCE,
            )
            .fit(distances)
            .labels_
        )
        by_label: dict[int, list[str]] = {}
        for text, label in zip(texts, labels, strict=True):
            by_label.setdefault(int(label), []).append(text)
        groups = list(by_label.values())
    themes, singles = [], []
    for group in groups:
        if len(group) >= 2:
            themes.append(
                Theme(_label(group), "comments", len(group), tuple(dict.fromkeys(group))[:examples])
            )
        else:
            singles.extend(group)
    if singles:
        themes.append(
            Theme(OTHER_LABEL, "comments", len(singles), tuple(dict.fromkeys(singles))[:examples])
        )
    return themes
