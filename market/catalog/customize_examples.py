"""The example in the "Customize…" box: a change someone might really ask of this sub-agent.

A fixed example ("use millilitres") reads as nonsense on a flashcard app and as a foreign
language on a Chinese one. The best example is a request people already made of this very
sub-agent (its forks remember what they were asked for); otherwise one typical of its
category. Either way it is in the listing's language when that is Chinese or Japanese, since
that is the language the person reading the page and writing the request most likely uses.
"""

from __future__ import annotations

from evolution.language import language_of

# One typical request per category and language (every category of ``CATEGORIES``).
EXAMPLES = {
    "en": {
        "diet": "Count in grams, and leave out dairy",
        "hydration": "Use millilitres, and remind me at 3 pm",
        "fitness": "Track in kilometres, and add a rest-day reminder",
        "health": "Add a note field, and remind me every evening",
        "mood": "Ask me once a day, at 9 pm",
        "sleep": "Start my week on Monday, and show naps separately",
        "finance": "Use euros, and add a monthly budget line",
        "study": "Add a column for the pronunciation, and quiz me each morning",
        "family": "Add my second child, and share it with my partner",
        "hobby": "Add a photo field, and sort by date",
        "travel": "Use kilograms, and add a list for the kids",
        "home": "Add the garden, and remind me on Saturdays",
    },
    "zh": {
        "diet": "用克计算，并且不要乳制品",
        "hydration": "用毫升，下午三点提醒我",
        "fitness": "用公里记录，并加上休息日提醒",
        "health": "加一个备注栏，每天晚上提醒我",
        "mood": "每天晚上九点问我一次",
        "sleep": "一周从周一开始，午睡单独显示",
        "finance": "用人民币，加上每月预算",
        "study": "加上拼音，每天早上考我一次",
        "family": "加上老二，并和孩子爸爸共享",
        "hobby": "加一个照片栏，按日期排序",
        "travel": "用公斤，再加一张孩子的清单",
        "home": "加上花园，每周六提醒我",
    },
    "ja": {
        "diet": "グラムで数えて、乳製品を除いてください",
        "hydration": "ミリリットルで、午後3時に知らせてください",
        "fitness": "キロメートルで記録して、休息日のリマインダーを追加",
        "health": "メモ欄を追加して、毎晩知らせてください",
        "mood": "毎日夜9時に一度だけ聞いてください",
        "sleep": "週の始まりを月曜日にして、昼寝は別に表示",
        "finance": "円で、月の予算の行を追加してください",
        "study": "読み方の列を追加して、毎朝クイズを出してください",
        "family": "二人目の子どもを追加して、夫と共有したい",
        "hobby": "写真の欄を追加して、日付順に並べてください",
        "travel": "キログラムで、子ども用のリストも追加",
        "home": "庭を追加して、毎週土曜日に知らせてください",
    },
}

# A request longer than this would be cut in the box; a shorter one reads as an example.
LONGEST_EXAMPLE = 80


def _language(text: str) -> str:
    """``zh``, ``ja`` or ``en`` (every other script and language gets the English examples)."""
    language = language_of(text)
    return language if language in ("zh", "ja") else "en"


def customize_placeholder(
    title: str, summary: str | None, category: str, fork_requests: list[str | None]
) -> str:
    """What to show in the customize box of the listing ``title``/``summary`` in ``category``:
    the first of its forks' ``fork_requests`` in the listing's language, else the category's
    example in that language."""
    language = _language(f"{title} {summary or ''}")
    for request in fork_requests:
        if request and len(request) <= LONGEST_EXAMPLE and _language(request) == language:
            return request
    return EXAMPLES[language][category]
