# ruff: noqa: E501  -- data module: recipes are prose (requests, stories); wrapping them hurts reading and editing.
"""Root sub-agents of the demo community and the fork recipes that grow from them.

A *root* is one believable tool somebody asked their agent for, with the story of
why. Its ``config`` is the app's ``CONFIG`` (see :mod:`.apps`); its ``forks`` are
recipes: the words a person used to ask for a change (``requests``, optionally in
``zh``/``ja``/``es``), and the concrete change those words imply (``set`` values,
``add_fields``, ``append`` to lists, extra ``scopes``/``features``). ``when`` lists
preconditions on the current config, so e.g. "use ounces" is only offered while an
app still counts millilitres, and "back to ml" only after someone switched to oz.

Recipe keys:
    id, requests, tag, does            required
    why                                first-person reasons used in fork stories
    when {path: value}                 preconditions (missing path == None)
    set {path: value}                  ``fields.<name>.<key>`` addresses a field
    add_fields [field, ...]            new inputs (marked ``extra`` so lists show them)
    append {path: [items]}             extend a list
    scopes [...], features {...}       permission / feature changes
    title, tags, zh/ja/es              new base title, extra tags, localized requests
    changelog                          makes the recipe usable as a later version
"""

from __future__ import annotations

from typing import Any

Field = dict[str, Any]


# --------------------------------------------------------------------------- field helpers


def number(
    name: str,
    label: str,
    unit: str = "",
    default: float | None = None,
    step: float = 1,
    lo: float = 0,
    hi: float | None = None,
    **kw: Any,
) -> Field:
    f: Field = {
        "name": name,
        "label": label,
        "type": "number",
        "unit": unit,
        "step": step,
        "min": lo,
    }
    if hi is not None:
        f["max"] = hi
    if default is not None:
        f["default"] = default
    f.update(kw)
    return f


def text(name: str, label: str, **kw: Any) -> Field:
    return {"name": name, "label": label, "type": "text", **kw}


def area(name: str, label: str, **kw: Any) -> Field:
    return {"name": name, "label": label, "type": "textarea", **kw}


def select(name: str, label: str, options: list[list[Any]], **kw: Any) -> Field:
    return {"name": name, "label": label, "type": "select", "options": options, **kw}


def date(name: str, label: str, **kw: Any) -> Field:
    return {"name": name, "label": label, "type": "date", **kw}


def clock(name: str, label: str, default: str, **kw: Any) -> Field:
    return {"name": name, "label": label, "type": "time", "default": default, **kw}


def check(name: str, label: str, **kw: Any) -> Field:
    return {"name": name, "label": label, "type": "checkbox", **kw}


def scale(name: str, label: str, lo: int, hi: int, default: int, **kw: Any) -> Field:
    return {
        "name": name,
        "label": label,
        "type": "range",
        "min": lo,
        "max": hi,
        "step": 1,
        "default": default,
        **kw,
    }


def extra(f: Field) -> Field:
    """A field added by a fork: lists show it generically as "Label: value"."""
    return {**f, "extra": True}


STARS = [[5, "★★★★★"], [4, "★★★★☆"], [3, "★★★☆☆"], [2, "★★☆☆☆"], [1, "★☆☆☆☆"]]
WEEK = [
    ["mon", "Mon"],
    ["tue", "Tue"],
    ["wed", "Wed"],
    ["thu", "Thu"],
    ["fri", "Fri"],
    ["sat", "Sat"],
    ["sun", "Sun"],
]


def recipe(name: str, tags: list[str], *ingredients: tuple[str, float, str]) -> dict[str, Any]:
    return {"name": name, "tags": tags, "ingredients": [list(i) for i in ingredients]}


# --------------------------------------------------------------------------- roots

ROOTS: list[dict[str, Any]] = []

# 1 ------------------------------------------------------------------------ water
ROOTS.append(
    {
        "key": "water-tracker",
        "title": "Water Tracker",
        "short": "Water tracker",
        "engine": "tally",
        "category": "hydration",
        "popularity": 100,
        "gender": "f",
        "tags": ["water", "hydration", "daily-goal"],
        "summary": "Tap a glass, watch the bar fill, and see the last week at a glance.",
        "bio": "ex-college rower, drinks 3 litres of water a day",
        "story": (
            "I drink 3 litres of water a day — it started when I rowed in college and never "
            "stopped. Every tracker I tried wanted an account and sent push spam, so I asked my "
            "agent for the simplest possible one: tap a glass, see the bar fill. The 7-day chart "
            "keeps me honest on weekends, which is exactly when I slip."
        ),
        "scopes": ["hydration.read", "hydration.write"],
        "reminder": {
            "en": "Time for a glass of water 💧",
            "zh": "该喝水啦 💧",
            "ja": "水を一杯飲みましょう 💧",
            "es": "Hora de un vaso de agua 💧",
        },
        "weather_ok": True,
        "i18n": {
            "zh": {
                "title": "喝水记录",
                "summary": "点一下记录一杯水，进度条和近 7 天图表一目了然。",
            },
            "ja": {
                "title": "水分補給トラッカー",
                "summary": "ワンタップで一杯を記録。今日の進み具合と1週間のグラフ。",
            },
            "es": {
                "title": "Control de Agua",
                "summary": "Registra cada vaso con un toque y mira tu semana.",
            },
        },
        "config": {
            "unit": "ml",
            "goal": 3000,
            "goalMode": "atLeast",
            "quick": [250, 500, 750],
            "chartDays": 7,
            "groupBy": "",
            "fields": [number("amount", "Amount", "ml", 250, step=50)],
        },
        "forks": [
            {
                "id": "oz",
                "when": {"unit": "ml"},
                "set": {
                    "unit": "oz",
                    "goal": 100,
                    "quick": [8, 12, 16, 24],
                    "fields.amount.unit": "oz",
                    "fields.amount.step": 1,
                    "fields.amount.default": 8,
                },
                "requests": [
                    "use ounces instead of ml",
                    "switch everything to oz please, nobody in Ohio knows what 750 ml looks like",
                    "can it count in fl oz? my tumbler is 40 oz",
                ],
                "tag": "oz",
                "does": "counts in ounces instead of millilitres",
                "why": [
                    "millilitres meant nothing to me — my tumbler says 40 oz on the side",
                    "my whole family thinks in ounces and cups",
                ],
                "changelog": "Switched to ounces; quick buttons are now 8, 12, 16 and 24 oz.",
            },
            {
                "id": "ml-back",
                "when": {"unit": "oz"},
                "set": {
                    "unit": "ml",
                    "goal": 2500,
                    "quick": [250, 330, 500],
                    "fields.amount.unit": "ml",
                    "fields.amount.step": 50,
                    "fields.amount.default": 250,
                },
                "requests": [
                    "we moved to Toronto and everything here is metric — back to ml please",
                    "switch back to millilitres, my new bottle is 500 ml",
                ],
                "tag": "back to ml",
                "does": "goes back to millilitres with a 2.5 L goal",
                "why": ["we moved to Toronto and every bottle here is labelled in millilitres"],
            },
            {
                "id": "pregnancy",
                "gender": "f",
                "when": {"unit": "ml"},
                "set": {"goal": 2300},
                "requests": [
                    "I'm pregnant and my midwife wants me around 2.3 litres a day — set the goal to 2300 ml",
                    "second trimester, doctor says 2.3 L. can the goal be that instead of 3 L?",
                ],
                "zh": ["我怀孕了，医生建议每天喝 2.3 升水，把目标改成 2300 毫升吧"],
                "tag": "pregnancy 2.3 L",
                "does": "aims for 2.3 litres a day during pregnancy",
                "why": [
                    "I'm 22 weeks pregnant and 3 litres had me running to the bathroom all day"
                ],
            },
            {
                "id": "breastfeeding",
                "gender": "f",
                "when": {"unit": "ml"},
                "set": {"goal": 3800, "quick": [250, 500]},
                "requests": [
                    "I'm breastfeeding and constantly thirsty — set the goal to 3.8 L and make the buttons 250 and 500"
                ],
                "tag": "breastfeeding 3.8 L",
                "does": "aims for 3.8 litres for nursing parents",
                "why": ["nursing a newborn makes me thirstier than marathon training ever did"],
            },
            {
                "id": "goal-64oz",
                "when": {"unit": "oz"},
                "set": {"goal": 64, "quick": [8, 16]},
                "requests": [
                    "8 glasses a day is my target, so 64 oz — 100 is way too much for me",
                    "my doctor says 64 oz is plenty, please change the goal",
                ],
                "tag": "64 oz goal",
                "does": "aims for the classic eight glasses (64 oz)",
                "why": ["100 oz was a goal for a linebacker, not a 5'2\" accountant"],
                "changelog": "Goal is now 64 oz — eight glasses.",
            },
            {
                "id": "summer-4l",
                "when": {"unit": "ml"},
                "set": {"goal": 4000, "quick": [500, 750, 1000]},
                "requests": [
                    "I do landscaping in Arizona — summer days I need 4 litres minimum, bump the goal",
                    "coach says 4 L on training days in July, can you set that and add a 1 L button",
                ],
                "tag": "4 L summer",
                "does": "aims for 4 litres for hot days and hard training",
                "why": ["I work outdoors in Phoenix and 3 litres is nothing in July"],
            },
            {
                "id": "family",
                "when": {"groupBy": ""},
                "set": {"groupBy": "who"},
                "add_fields": [
                    extra(
                        select(
                            "who",
                            "Who",
                            [["me", "Me"], ["big", "Big kid"], ["little", "Little one"]],
                        )
                    )
                ],
                "scopes": ["family.read"],
                "requests": [
                    "track the kids too — add a 'who' picker for me and my two kids",
                    "make it a family water chart, my kids never drink enough at school",
                ],
                "zh": ["能不能把孩子也加进去？我想看看两个孩子每天喝了多少水"],
                "tag": "whole family",
                "does": "tracks everyone in the house with a per-person breakdown",
                "why": ["my kids come home from school with their bottles still full"],
            },
            {
                "id": "drink-type",
                "add_fields": [
                    extra(
                        select(
                            "drink",
                            "Drink",
                            [
                                ["water", "Water"],
                                ["tea", "Tea"],
                                ["sparkling", "Sparkling"],
                                ["soup", "Soup"],
                            ],
                        )
                    )
                ],
                "requests": [
                    "herbal tea counts for me — add a drink type so I can see what I'm actually drinking",
                    "add sparkling water and tea as options, plain water bores me",
                ],
                "tag": "drink types",
                "does": "records what kind of drink each glass was",
                "why": ["half my water comes from sparkling water and rooibos"],
            },
            {
                "id": "electrolytes",
                "add_fields": [extra(check("salts", "Electrolytes"))],
                "requests": [
                    "I'm training for my first marathon — let me mark which bottles had electrolytes"
                ],
                "tag": "electrolytes",
                "does": "marks which drinks had electrolytes",
                "why": ["long runs in August wiped me out until I started adding salts"],
            },
            {
                "id": "kidney",
                "when": {"unit": "ml"},
                "set": {"goal": 3500},
                "add_fields": [extra(check("lemon", "With lemon"))],
                "scopes": ["health.read"],
                "requests": [
                    "after my kidney stone my urologist wants 3.5 L a day, ideally with lemon — can it track both"
                ],
                "tag": "kidney-stone plan",
                "does": "aims for 3.5 litres and notes lemon water",
                "why": ["one kidney stone was enough for a lifetime"],
            },
        ],
    }
)

# 2 ------------------------------------------------------------------------ meal planner
_FAMILY_RECIPES = [
    recipe(
        "Sheet-pan chicken fajitas",
        ["quick", "gluten"],
        ("chicken breast", 700, "g"),
        ("bell peppers", 3, ""),
        ("onion", 1, ""),
        ("tortillas", 8, ""),
        ("sour cream", 1, "cup"),
    ),
    recipe(
        "Spaghetti bolognese",
        ["gluten"],
        ("ground beef", 500, "g"),
        ("spaghetti", 400, "g"),
        ("crushed tomatoes", 1, "can"),
        ("onion", 1, ""),
        ("parmesan", 50, "g"),
    ),
    recipe(
        "Peanut noodle bowls",
        ["quick", "vegetarian", "gluten"],
        ("rice noodles", 300, "g"),
        ("peanut butter", 0.5, "cup"),
        ("cucumber", 1, ""),
        ("carrots", 2, ""),
        ("tofu", 400, "g"),
    ),
    recipe(
        "Black bean tacos",
        ["quick", "vegetarian"],
        ("black beans", 2, "can"),
        ("tortillas", 8, ""),
        ("avocado", 2, ""),
        ("cheddar", 150, "g"),
        ("salsa", 1, "jar"),
    ),
    recipe(
        "Salmon, rice & broccoli",
        ["fish"],
        ("salmon fillets", 4, ""),
        ("rice", 2, "cup"),
        ("broccoli", 2, "head"),
        ("soy sauce", 3, "tbsp"),
    ),
    recipe(
        "Chicken noodle soup",
        ["gluten"],
        ("chicken thighs", 500, "g"),
        ("egg noodles", 250, "g"),
        ("carrots", 3, ""),
        ("celery", 3, "stalk"),
        ("broth", 2, "l"),
    ),
    recipe(
        "Homemade pizza night",
        ["gluten", "dairy"],
        ("pizza dough", 2, ""),
        ("mozzarella", 300, "g"),
        ("tomato sauce", 1, "cup"),
        ("pepperoni", 100, "g"),
    ),
    recipe(
        "Turkey chili",
        [],
        ("ground turkey", 500, "g"),
        ("kidney beans", 2, "can"),
        ("crushed tomatoes", 1, "can"),
        ("onion", 1, ""),
        ("chili powder", 2, "tbsp"),
    ),
    recipe(
        "Veggie fried rice",
        ["quick", "vegetarian", "egg"],
        ("cooked rice", 3, "cup"),
        ("eggs", 3, ""),
        ("frozen peas", 1, "cup"),
        ("soy sauce", 3, "tbsp"),
    ),
    recipe(
        "Shrimp stir-fry",
        ["quick", "shellfish"],
        ("shrimp", 500, "g"),
        ("broccoli", 1, "head"),
        ("snap peas", 200, "g"),
        ("ginger", 1, "tbsp"),
    ),
    recipe(
        "Mac & cheese with peas",
        ["vegetarian", "dairy", "gluten"],
        ("macaroni", 400, "g"),
        ("cheddar", 250, "g"),
        ("milk", 2, "cup"),
        ("frozen peas", 1, "cup"),
    ),
    recipe(
        "Red lentil dal",
        ["vegetarian", "vegan"],
        ("red lentils", 2, "cup"),
        ("coconut milk", 1, "can"),
        ("onion", 1, ""),
        ("spinach", 150, "g"),
        ("rice", 2, "cup"),
    ),
    recipe(
        "Satay chicken skewers",
        ["peanut"],
        ("chicken thighs", 700, "g"),
        ("peanut sauce", 0.5, "cup"),
        ("cucumber", 1, ""),
        ("rice", 2, "cup"),
    ),
]
ROOTS.append(
    {
        "key": "family-recipe-planner",
        "title": "Family Meal Planner",
        "short": "Family meal planner",
        "engine": "mealplan",
        "category": "family",
        "popularity": 80,
        "gender": "f",
        "tags": ["meal-planning", "recipes", "groceries"],
        "summary": "Plan a week of family dinners from your recipe box and get one scaled shopping list.",
        "bio": "mom of three, Sunday meal-prepper, owns too many sheet pans",
        "story": (
            "Every night at 5pm somebody asks what's for dinner and I used to panic. Now on Sunday "
            "I fill in the week from our family recipes and the shopping list writes itself, scaled "
            "for the five of us. My husband does Thursday groceries from the same list, so no more "
            "three jars of salsa."
        ),
        "scopes": ["diet.read", "diet.write"],
        "reminder": {"en": "Sunday planning: fill in next week's dinners 🍲"},
        "config": {
            "days": WEEK,
            "meals": [["dinner", "Dinner"]],
            "servings": 5,
            "baseServings": 4,
            "avoid": [],
            "avoidLabel": "",
            "busyDays": [],
            "recipes": _FAMILY_RECIPES,
            "fields": [
                text("name", "Recipe name", maxlength=60),
                area("ingredients", "Ingredients (one per line: item, qty, unit)"),
            ],
        },
        "forks": [
            {
                "id": "peanut-free",
                "append": {"avoid": ["peanut"]},
                "set": {"avoidLabel": "peanut-free", "servings": 4},
                "scopes": ["family.read", "health.read"],
                "requests": [
                    "make it work for a family of four, one child allergic to peanuts",
                    "my son has a peanut allergy — anything with peanuts should be impossible to pick",
                ],
                "zh": ["我们家四口人，小儿子对花生过敏，请把含花生的菜都禁掉"],
                "tag": "(peanut-free)",
                "does": "blocks every recipe with peanuts and plans for four",
                "why": [
                    "our youngest had an anaphylactic reaction at a birthday party last spring"
                ],
            },
            {
                "id": "six",
                "set": {"servings": 6},
                "requests": [
                    "we're a family of six now (surprise twins!) — scale the shopping list",
                    "make the shopping list for six, my parents moved in with us",
                ],
                "tag": "for six",
                "does": "scales the shopping list for six people",
                "why": ["my in-laws moved in and suddenly every recipe came up short"],
            },
            {
                "id": "vegetarian",
                "unless": ["zh-dishes"],
                "append": {
                    "avoid": ["chicken", "beef", "turkey", "salmon", "shrimp", "pepperoni"],
                    "recipes": [
                        recipe(
                            "Chickpea & spinach curry",
                            ["vegetarian", "vegan"],
                            ("chickpeas", 2, "can"),
                            ("spinach", 200, "g"),
                            ("coconut milk", 1, "can"),
                            ("rice", 2, "cup"),
                        ),
                        recipe(
                            "Halloumi veggie skewers",
                            ["vegetarian", "dairy", "quick"],
                            ("halloumi", 250, "g"),
                            ("zucchini", 2, ""),
                            ("cherry tomatoes", 300, "g"),
                            ("quinoa", 1, "cup"),
                        ),
                    ],
                },
                "set": {"avoidLabel": "vegetarian"},
                "requests": [
                    "I'm vegetarian and training for a half marathon — hide the meat dishes and add a couple of high-protein veggie dinners",
                    "we went vegetarian as a family this year, take the meat out",
                ],
                "tag": "(vegetarian)",
                "does": "hides meat and fish and adds protein-rich vegetarian dinners",
                "why": ["my teenager went vegetarian and honestly the rest of us followed"],
            },
            {
                "id": "gluten-free",
                "unless": ["zh-dishes"],
                "append": {"avoid": ["gluten"]},
                "set": {"avoidLabel": "gluten-free"},
                "scopes": ["health.read"],
                "requests": [
                    "my daughter was just diagnosed with celiac — flag and block anything with gluten"
                ],
                "tag": "(gluten-free)",
                "does": "blocks recipes tagged with gluten",
                "why": ["my daughter was diagnosed with celiac in March"],
            },
            {
                "id": "dairy-free",
                "unless": ["zh-dishes"],
                "append": {"avoid": ["dairy", "cheese", "cheddar", "milk", "sour cream"]},
                "set": {"avoidLabel": "dairy-free"},
                "requests": [
                    "the baby reacts to dairy through my milk, so I'm off dairy — block cheese, milk, sour cream"
                ],
                "tag": "(dairy-free)",
                "does": "blocks dishes with milk, cheese or sour cream",
                "why": [
                    "our pediatrician thinks the baby's rash is a dairy thing, so I'm off dairy while nursing"
                ],
            },
            {
                "id": "shellfish",
                "gender": "f",
                "unless": ["zh-dishes"],
                "append": {"avoid": ["shrimp", "shellfish"]},
                "set": {"avoidLabel": "no shellfish"},
                "requests": ["my husband is allergic to shellfish, please block shrimp"],
                "tag": "(no shellfish)",
                "does": "blocks shrimp and other shellfish",
                "why": [
                    "my husband's shellfish allergy means one wrong jar of sauce is an ER trip"
                ],
            },
            {
                "id": "lunches",
                "set": {"meals": [["lunch", "Lunch"], ["dinner", "Dinner"]]},
                "requests": ["add lunches too, I work from home and keep skipping lunch"],
                "tag": "lunch + dinner",
                "does": "plans lunch as well as dinner",
                "why": ["working from home, I kept eating crackers over the sink at 2pm"],
            },
            {
                "id": "weeknights",
                "set": {"days": WEEK[:5]},
                "requests": ["weekends we wing it — only plan Monday to Friday"],
                "tag": "weeknights only",
                "does": "plans Monday to Friday only",
                "why": [
                    "Saturdays are pizza and Sundays are my mom's, so only weeknights need a plan"
                ],
            },
            {
                "id": "busy-nights",
                "set": {"busyDays": ["tue", "thu"]},
                "scopes": ["calendar.read"],
                "requests": [
                    "Tuesdays and Thursdays are soccer practice — only let me pick quick dinners those nights",
                    "read my calendar and keep practice nights to 20-minute meals",
                ],
                "tag": "busy-night mode",
                "does": "only offers quick recipes on practice nights",
                "why": [
                    "two kids in travel soccer means Tuesday and Thursday dinner happens in 20 minutes or not at all"
                ],
            },
            {
                "id": "zh-dishes",
                "unless": ["vegetarian", "gluten-free", "dairy-free", "shellfish"],
                "set": {
                    "recipes": [
                        recipe(
                            "番茄炒蛋",
                            ["quick", "egg", "vegetarian"],
                            ("番茄", 3, "个"),
                            ("鸡蛋", 4, "个"),
                        ),
                        recipe(
                            "红烧肉",
                            [],
                            ("五花肉", 500, "克"),
                            ("冰糖", 30, "克"),
                            ("生抽", 2, "勺"),
                        ),
                        recipe(
                            "清蒸鱼",
                            ["fish"],
                            ("鲈鱼", 1, "条"),
                            ("葱姜", 1, "份"),
                            ("蒸鱼豉油", 2, "勺"),
                        ),
                        recipe(
                            "麻婆豆腐",
                            ["quick"],
                            ("豆腐", 400, "克"),
                            ("牛肉末", 100, "克"),
                            ("豆瓣酱", 1, "勺"),
                        ),
                        recipe(
                            "宫保鸡丁",
                            ["peanut"],
                            ("鸡腿肉", 400, "克"),
                            ("花生米", 50, "克"),
                            ("干辣椒", 8, "个"),
                        ),
                        recipe(
                            "酸辣土豆丝",
                            ["quick", "vegetarian"],
                            ("土豆", 2, "个"),
                            ("醋", 2, "勺"),
                        ),
                        recipe(
                            "猪肉白菜饺子",
                            ["gluten"],
                            ("饺子皮", 50, "张"),
                            ("猪肉馅", 500, "克"),
                            ("白菜", 1, "颗"),
                        ),
                        recipe(
                            "西兰花炒虾仁",
                            ["shellfish", "quick"],
                            ("虾仁", 300, "克"),
                            ("西兰花", 1, "颗"),
                        ),
                    ]
                },
                "requests": [
                    "switch the recipes to Chinese home cooking — my mother-in-law cooks for us now"
                ],
                "zh": [
                    "能不能换成中国家常菜？婆婆来多伦多帮我们带孩子，现在是她做饭",
                    "请把菜谱换成中式家常菜，孩子们最爱番茄炒蛋",
                ],
                "tag": "中式家常菜",
                "tags": ["chinese"],
                "does": "swaps the recipe box for Chinese home cooking",
                "why": [
                    "my mother-in-law moved in to help with the baby and she does the cooking now"
                ],
            },
        ],
    }
)

# 3 ------------------------------------------------------------------------ workout
_LIFTS = [
    ["squat", "Squat"],
    ["deadlift", "Deadlift"],
    ["bench", "Bench press"],
    ["ohp", "Overhead press"],
    ["row", "Row"],
    ["hipthrust", "Hip thrust"],
]
ROOTS.append(
    {
        "key": "workout-log",
        "title": "Strength Workout Log",
        "short": "Strength log",
        "engine": "workout",
        "category": "fitness",
        "popularity": 70,
        "gender": "f",
        "tags": ["strength", "gym", "lifting"],
        "summary": "Log sets, reps and weight; see daily volume and personal bests per lift.",
        "bio": "started lifting at 38, mom of two, deadlifts more than her husband",
        "story": (
            "I started lifting at 38, mostly so I could carry both kids up the stairs at once. "
            "Paper notebooks got lost in my gym bag, and the big apps wanted me to join challenges. "
            "This one just remembers what I lifted last Tuesday and shows my personal bests, which "
            "is all the motivation I need."
        ),
        "scopes": ["fitness.read", "fitness.write"],
        "reminder": {
            "en": "Lifting day? Your barbell misses you 🏋️",
            "zh": "今天练了吗？🏋️",
            "ja": "今日はトレーニングの日？🏋️",
            "es": "¿Hoy toca pesas? 🏋️",
        },
        "i18n": {
            "zh": {
                "title": "力量训练日志",
                "summary": "记录组数、次数和重量，查看训练量和个人最佳。",
            },
            "ja": {
                "title": "筋トレ記録",
                "summary": "セット・回数・重量を記録して、ボリュームと自己ベストを確認。",
            },
            "es": {
                "title": "Registro de Pesas",
                "summary": "Anota series, repeticiones y peso; mira tu volumen y récords.",
            },
        },
        "config": {
            "unit": "kg",
            "chartDays": 14,
            "fields": [
                select("exercise", "Exercise name", _LIFTS),
                number("sets", "Sets", "", 3, hi=20),
                number("reps", "Reps", "", 8, hi=100),
                number("weight", "Weight", "kg", 20, step=2.5),
            ],
        },
        "forks": [
            {
                "id": "lb",
                "when": {"unit": "kg"},
                "set": {
                    "unit": "lb",
                    "fields.weight.unit": "lb",
                    "fields.weight.step": 5,
                    "fields.weight.default": 45,
                },
                "requests": [
                    "switch to pounds, every plate at my gym is in lb",
                    "use lbs please — I'm American, kg makes me do math between sets",
                ],
                "tag": "lb",
                "does": "uses pounds and 5 lb steps",
                "why": ["every plate at my Y is stamped in pounds"],
                "changelog": "Weights in pounds now, with 5 lb steps.",
            },
            {
                "id": "kg-back",
                "when": {"unit": "lb"},
                "set": {
                    "unit": "kg",
                    "fields.weight.unit": "kg",
                    "fields.weight.step": 2.5,
                    "fields.weight.default": 20,
                },
                "requests": ["back to kilos — my new gym in Montreal only has kg plates"],
                "tag": "kg",
                "does": "goes back to kilograms",
                "why": ["my new gym in Montreal only has kilo plates"],
            },
            {
                "id": "knee",
                "when": {"fields.knee": None},
                "add_fields": [
                    extra(
                        scale(
                            "knee",
                            "Knee pain (0–10)",
                            0,
                            10,
                            0,
                            warnAbove=5,
                            warning="Knee's grumpy — swap squats for something gentler today.",
                        )
                    )
                ],
                "scopes": ["health.injuries.read"],
                "requests": [
                    "my knee is acting up — add a knee pain score, warn me when it's over 5, and let it read my injury notes",
                    "add a knee pain slider because my knee is acting up after the ski trip",
                ],
                "tag": "knee-friendly",
                "does": "tracks knee pain and warns before a bad squat day",
                "why": ["I tweaked my knee skiing at Whistler and my physio wants a pain log"],
            },
            {
                "id": "rpe",
                "add_fields": [extra(scale("rpe", "RPE", 1, 10, 7))],
                "requests": ["my coach wants RPE on every set, add a 1–10 slider"],
                "tag": "RPE",
                "does": "records effort (RPE) for every set",
                "why": ["my online coach programs everything by RPE"],
            },
            {
                "id": "kettlebell",
                "unless": ["postpartum", "bodyweight"],
                "set": {
                    "fields.exercise.options": [
                        ["swing", "Swing"],
                        ["goblet", "Goblet squat"],
                        ["tgu", "Turkish get-up"],
                        ["clean", "Clean & press"],
                        ["snatch", "Snatch"],
                    ],
                    "fields.weight.default": 16,
                    "fields.weight.step": 4,
                },
                "title": "Kettlebell Workout Log",
                "requests": [
                    "I only have two kettlebells at home — swap the exercise list for kettlebell moves"
                ],
                "tag": "kettlebells",
                "tags": ["kettlebell"],
                "does": "logs kettlebell moves instead of barbell lifts",
                "why": [
                    "with a newborn I can't get to the gym, but I have a 16 and a 24 kg bell in the garage"
                ],
            },
            {
                "id": "postpartum",
                "gender": "f",
                "unless": ["kettlebell", "bodyweight"],
                "set": {
                    "fields.exercise.options": [
                        ["bridge", "Glute bridge"],
                        ["deadbug", "Dead bug"],
                        ["birddog", "Bird dog"],
                        ["goblet", "Goblet squat"],
                        ["bandrow", "Band row"],
                    ],
                    "fields.weight.default": 0,
                },
                "add_fields": [extra(check("leak", "Any leaking or heaviness"))],
                "scopes": ["health.read"],
                "title": "Postpartum Strength Log",
                "requests": [
                    "6 months postpartum and cleared by my pelvic floor physio — gentle core moves only, and a checkbox for symptoms"
                ],
                "tag": "postpartum rebuild",
                "tags": ["postpartum"],
                "does": "swaps in gentle core work and a symptom check for postpartum recovery",
                "why": [
                    "my pelvic floor physio cleared me for strength work at six months postpartum"
                ],
            },
            {
                "id": "bodyweight",
                "unless": ["kettlebell", "postpartum"],
                "set": {
                    "fields.exercise.options": [
                        ["pushup", "Push-up"],
                        ["pullup", "Pull-up"],
                        ["lunge", "Lunge"],
                        ["plank", "Plank (sec)"],
                        ["dip", "Dip"],
                    ],
                    "fields.weight.default": 0,
                },
                "requests": [
                    "no gym for me, just bodyweight stuff in the park — push-ups, pull-ups, lunges"
                ],
                "tag": "bodyweight",
                "does": "logs bodyweight exercises",
                "why": ["I train in the park while my kids are at soccer practice"],
            },
            {
                "id": "sleep-aware",
                "add_fields": [extra(number("slept", "Slept last night", "h", 7, step=0.5))],
                "scopes": ["sleep.read"],
                "requests": [
                    "pull in how much I slept — I lift like garbage on 5 hours and want to see it"
                ],
                "tag": "sleep-aware",
                "does": "puts last night's sleep next to each session",
                "why": ["I'm a resident doing nights and my lifts crater after a bad call shift"],
            },
        ],
    }
)

# 4 ------------------------------------------------------------------------ piano
_PIANO = [
    ["scales", "Scales"],
    ["sight", "Sight-reading"],
    ["piece", "Current piece"],
    ["technique", "Technique"],
    ["free", "Just playing"],
]
ROOTS.append(
    {
        "key": "piano-practice-timer",
        "title": "Piano Practice Timer",
        "short": "Practice timer",
        "engine": "timer",
        "category": "hobby",
        "popularity": 55,
        "gender": "f",
        "tags": ["piano", "music", "practice"],
        "summary": "A practice stopwatch that logs what you worked on and keeps your streak going.",
        "bio": "learning piano at 40, accountant by day",
        "story": (
            "I'm learning piano at 40. My daughter started lessons and I got tired of sitting in "
            "the car for 45 minutes, so I signed up too. My teacher wants 30 minutes a day split "
            "between scales, sight-reading and my piece — this timer tells me where my minutes "
            "actually go, and the streak has kept me going for 94 days."
        ),
        "scopes": ["hobby.read", "hobby.write", "music.read"],
        "reminder": {
            "en": "Piano time! Even 10 minutes counts 🎹",
            "zh": "该练琴啦，十分钟也好 🎹",
            "ja": "ピアノの時間です。10分でもOK 🎹",
            "es": "¡Hora del piano! 🎹",
        },
        "i18n": {
            "zh": {"title": "练琴计时器", "summary": "练琴秒表：记录练了什么，保持每日打卡。"},
            "ja": {
                "title": "ピアノ練習タイマー",
                "summary": "何を練習したか記録できる練習用ストップウォッチ。",
            },
            "es": {
                "title": "Cronómetro de Piano",
                "summary": "Cronometra tu práctica y mantén tu racha.",
            },
        },
        "config": {
            "dailyGoal": 30,
            "chartDays": 7,
            "fields": [
                select("focus", "Focus", _PIANO),
                number("minutes", "Minutes (0 = use timer)", "", 0, hi=300),
                text("note", "Note", extra=True, maxlength=120),
            ],
        },
        "forks": [
            {
                "id": "20min",
                "when": {"dailyGoal": 30},
                "set": {"dailyGoal": 20},
                "requests": ["20 minutes is realistic with a toddler, make that the daily goal"],
                "zh": ["孩子还小，每天 20 分钟就够了，把目标改成 20 分钟吧"],
                "ja": ["子どもが小さいので、1日の目標を20分にしてください"],
                "tag": "20-min days",
                "does": "sets a gentler 20-minute daily goal",
                "why": [
                    "30 minutes a day with a two-year-old hanging off the bench just wasn't happening"
                ],
                "changelog": "Daily goal lowered to 20 minutes.",
            },
            {
                "id": "kids",
                "add_fields": [
                    extra(
                        select(
                            "who",
                            "Who's practising",
                            [["oldest", "Oldest"], ["youngest", "Youngest"]],
                        )
                    )
                ],
                "set": {"dailyGoal": 15},
                "requests": [
                    "make it work for both kids — they each need 15 minutes and their teacher wants proof"
                ],
                "tag": "for the kids",
                "does": "logs practice per child against a 15-minute goal",
                "why": ["their teacher asks for a practice log every week and I kept making it up"],
            },
            {
                "id": "guitar",
                "unless": ["violin", "ukulele"],
                "set": {
                    "fields.focus.options": [
                        ["chords", "Chords"],
                        ["strum", "Strumming"],
                        ["finger", "Fingerpicking"],
                        ["songs", "Songs"],
                        ["ear", "Ear training"],
                    ]
                },
                "title": "Guitar Practice Timer",
                "tags": ["guitar"],
                "requests": [
                    "adapt it for guitar — chords, strumming patterns and songs instead of scales"
                ],
                "tag": "guitar",
                "does": "tracks guitar practice: chords, strumming, songs",
                "why": ["I finally bought the guitar I wanted at 16"],
            },
            {
                "id": "violin",
                "unless": ["guitar", "ukulele"],
                "set": {
                    "fields.focus.options": [
                        ["bow", "Open strings & bowing"],
                        ["scales", "Scales"],
                        ["suzuki", "Suzuki piece"],
                        ["review", "Review pieces"],
                    ],
                    "dailyGoal": 20,
                },
                "title": "Violin Practice Timer",
                "tags": ["violin", "suzuki"],
                "requests": [
                    "my 6-year-old does Suzuki violin — bowing, review pieces and the current piece, 20 min a day"
                ],
                "tag": "Suzuki violin",
                "does": "tracks Suzuki violin practice for a young child",
                "why": [
                    "Suzuki method means the parent is the practice coach, and I needed a system"
                ],
            },
            {
                "id": "recital",
                "unless": ["guitar", "violin", "ukulele"],
                "append": {
                    "fields.focus.options": [["hanon", "Hanon"], ["recital", "Recital piece"]]
                },
                "requests": [
                    "add Hanon exercises and my recital piece to the list",
                    "my recital is in May — give the recital piece its own category",
                ],
                "tag": "recital prep",
                "does": "adds Hanon and a recital piece to practice focus",
                "why": ["my first adult recital is in May and I'm terrified"],
            },
            {
                "id": "ukulele",
                "unless": ["guitar", "violin"],
                "set": {
                    "fields.focus.options": [
                        ["chords", "Chords"],
                        ["strum", "Strumming"],
                        ["songs", "Songs"],
                    ],
                    "dailyGoal": 15,
                },
                "title": "Ukulele Practice Timer",
                "tags": ["ukulele"],
                "requests": [
                    "turn it into a ukulele timer for my 9-year-old, just chords, strumming and songs"
                ],
                "tag": "ukulele",
                "does": "tracks a kid's ukulele practice",
                "why": [
                    "my son got a ukulele for his birthday and plays it for exactly four minutes"
                ],
            },
            {
                "id": "mood-after",
                "add_fields": [
                    extra(
                        select(
                            "felt",
                            "How it felt",
                            [["great", "Flowed"], ["ok", "Okay"], ["rough", "Frustrating"]],
                        )
                    )
                ],
                "requests": [
                    "add how each session felt, I want to see if mornings go better than evenings"
                ],
                "tag": "how it felt",
                "does": "records how each session felt",
                "why": [
                    "some evenings I'm too fried to play and I want proof so I can switch to mornings"
                ],
            },
        ],
    }
)

# 5 ------------------------------------------------------------------------ sleep
_QUALITY = [["1", "Rough"], ["2", "Meh"], ["3", "OK"], ["4", "Good"], ["5", "Great"]]
ROOTS.append(
    {
        "key": "sleep-log",
        "title": "Sleep Log",
        "short": "Sleep log",
        "engine": "span",
        "category": "sleep",
        "popularity": 50,
        "gender": None,
        "tags": ["sleep", "bedtime", "rest"],
        "summary": "Bedtime and wake-up in, hours and a 7-day average out.",
        "bio": "middle-school science teacher, chronic 'one more episode' person",
        "story": (
            "I teach middle-school science and I was convinced I slept seven hours a night. "
            "Two weeks of writing down bedtime and wake-up said 5 hours 50. The weekly average is "
            "the number that finally got me to put the phone in the kitchen at 10."
        ),
        "scopes": ["sleep.read", "sleep.write"],
        "reminder": {
            "en": "Wind-down time — phone in the kitchen 🌙",
            "zh": "该准备睡觉了，手机放远点 🌙",
            "ja": "そろそろ寝る準備を。スマホは遠くに 🌙",
            "es": "Hora de desconectarse 🌙",
        },
        "i18n": {
            "zh": {
                "title": "睡眠记录",
                "summary": "记下上床和起床时间，自动算出睡了多久和 7 天平均。",
            },
            "ja": {"title": "睡眠ログ", "summary": "就寝と起床の時刻から睡眠時間と7日平均を計算。"},
            "es": {
                "title": "Registro de Sueño",
                "summary": "Anota a qué hora te dormiste y despertaste; ve tu promedio.",
            },
        },
        "config": {
            "goalHours": 8,
            "chartDays": 14,
            "fields": [
                date("date", "Night of"),
                clock("start", "Bedtime", "22:30"),
                clock("end", "Woke up", "06:30"),
                select("quality", "Quality", _QUALITY, default="3"),
                number("wakeups", "Wake-ups", "", 0, hi=20, extra=True),
            ],
        },
        "forks": [
            {
                "id": "goal7",
                "when": {"goalHours": 8},
                "set": {"goalHours": 7},
                "requests": ["7 hours is my real target, 8 just makes me feel bad every morning"],
                "zh": ["把目标改成 7 小时吧，8 小时对我来说不现实"],
                "tag": "7 h goal",
                "does": "uses a 7-hour goal",
                "changelog": "Goal is 7 hours now.",
                "why": ["my doctor said 7 is fine for me and 8 was just guilt"],
            },
            {
                "id": "newparent",
                "gender": "f",
                "set": {"goalHours": 6},
                "add_fields": [extra(number("feeds", "Night feeds", "", 2, hi=10))],
                "requests": [
                    "new mom here — add how many times the baby woke me, and set the goal to 6 hours, 8 is a joke right now"
                ],
                "ja": [
                    "新米ママです。夜中の授乳回数を記録できるようにして、目標は6時間にしてください"
                ],
                "tag": "newborn edition",
                "does": "counts night feeds and aims for a realistic 6 hours",
                "why": ["our daughter is seven weeks old and sleep is a rumour"],
            },
            {
                "id": "nightshift",
                "set": {"fields.start.default": "08:30", "fields.end.default": "15:30"},
                "add_fields": [
                    extra(
                        select(
                            "shift",
                            "Shift",
                            [["day", "Day"], ["evening", "Evening"], ["night", "Night"]],
                        )
                    )
                ],
                "requests": [
                    "I work nights as an ER nurse — default bedtime should be 8:30am, and let me note which shift I was on"
                ],
                "tag": "night-shift",
                "does": "defaults to daytime sleep and records the shift",
                "why": ["three 12-hour night shifts a week turn your body clock into soup"],
            },
            {
                "id": "caffeine",
                "add_fields": [extra(clock("coffee", "Last coffee", "14:00"))],
                "requests": ["add when I had my last coffee, I suspect the 4pm latte"],
                "tag": "caffeine cutoff",
                "does": "notes the time of the last coffee",
                "why": ["I suspect my 4pm latte habit is the whole problem"],
            },
            {
                "id": "cpap",
                "add_fields": [extra(check("cpap", "CPAP used"))],
                "scopes": ["health.read"],
                "requests": ["I was just diagnosed with sleep apnea, add a CPAP checkbox"],
                "tag": "CPAP",
                "does": "adds a CPAP checkbox for sleep apnea",
                "why": ["I was diagnosed with sleep apnea at 45 and my sleep doctor wants a log"],
            },
            {
                "id": "perimenopause",
                "gender": "f",
                "add_fields": [
                    extra(check("sweats", "Night sweats")),
                    extra(number("flashes", "Hot flashes", "", 0, hi=20)),
                ],
                "scopes": ["health.read"],
                "requests": [
                    "perimenopause is wrecking my sleep — add a night sweats checkbox and a hot flash count"
                ],
                "tag": "perimenopause",
                "does": "tracks night sweats and hot flashes",
                "why": ["at 47 I went from sleeping like a rock to waking up drenched at 3am"],
            },
            {
                "id": "dreams",
                "add_fields": [extra(text("dream", "Dream", maxlength=140))],
                "scopes": ["journal.write"],
                "requests": ["add a line for dreams, I've started dream journaling"],
                "tag": "dream notes",
                "does": "keeps a one-line dream journal",
                "why": ["I started dream journaling after a podcast and now I can't stop"],
            },
        ],
    }
)

# 6 ------------------------------------------------------------------------ mood
_MOOD_SCALE = [
    [1, "Awful", "😞"],
    [2, "Low", "🙁"],
    [3, "Okay", "😐"],
    [4, "Happy", "🙂"],
    [5, "Wonderful", "😄"],
]
_MOOD_TAGS = [
    ["work", "Work"],
    ["kids", "Kids"],
    ["partner", "Partner"],
    ["sleep", "Slept badly"],
    ["exercise", "Exercise"],
    ["friends", "Friends"],
    ["outside", "Outside"],
    ["anxious", "Anxious"],
]
ROOTS.append(
    {
        "key": "mood-diary",
        "title": "Mood Diary",
        "short": "Mood diary",
        "engine": "mood",
        "category": "mood",
        "popularity": 48,
        "gender": "f",
        "tags": ["mood", "journal", "mental-health"],
        "summary": "Quick mood check-ins with tags, so patterns show up over weeks.",
        "bio": "therapy advocate, mom of a very loud toddler",
        "story": (
            "My therapist asked me to track my mood between sessions and I kept forgetting the "
            "paper sheet. Now it's two taps and an optional note. After a month the tag counts "
            "showed me that my worst days almost always follow a bad night's sleep, not work."
        ),
        "scopes": ["mood.read", "mood.write"],
        "reminder": {
            "en": "How are you doing right now? 🌤️",
            "zh": "现在心情怎么样？🌤️",
            "ja": "今の気分はどう？🌤️",
            "es": "¿Cómo te sientes ahora? 🌤️",
        },
        "i18n": {
            "zh": {"title": "心情日记", "summary": "两下点击记录心情和标签，几周后就能看出规律。"},
            "ja": {
                "title": "きもち日記",
                "summary": "タップで気分とタグを記録。数週間でパターンが見えてきます。",
            },
            "es": {
                "title": "Diario de Ánimo",
                "summary": "Registra tu ánimo con etiquetas y descubre patrones.",
            },
        },
        "config": {
            "scale": _MOOD_SCALE,
            "tags": _MOOD_TAGS,
            "prompts": [],
            "chartDays": 14,
            "fields": [area("note", "What happened?", maxlength=500)],
        },
        "forks": [
            {
                "id": "cycle",
                "gender": "f",
                "unless": ["teen"],
                "add_fields": [extra(check("period", "Period day"))],
                "scopes": ["health.read"],
                "requests": [
                    "add a period-day checkbox, I want to see if my low days line up with my cycle"
                ],
                "tag": "cycle-aware",
                "does": "marks period days next to moods",
                "why": ["I suspected PMDD and my doctor asked for three months of data"],
            },
            {
                "id": "gratitude",
                "set": {
                    "prompts": [
                        "Three good things from today?",
                        "Who made you smile today?",
                        "What's one thing you handled well?",
                        "What are you looking forward to?",
                    ]
                },
                "requests": [
                    "add a daily gratitude prompt — my therapist suggested 'three good things'"
                ],
                "tag": "gratitude prompts",
                "does": "shows a daily gratitude prompt",
                "why": ["my therapist suggested the 'three good things' exercise"],
                "changelog": "Added a rotating gratitude prompt at the top.",
            },
            {
                "id": "teen",
                "unless": ["cycle"],
                "set": {
                    "tags": [
                        ["school", "School"],
                        ["friends", "Friends"],
                        ["sports", "Sports"],
                        ["phone", "Phone"],
                        ["family", "Family"],
                        ["homework", "Homework"],
                    ]
                },
                "title": "Teen Mood Check-in",
                "requests": [
                    "make a version for my 14-year-old: tags for school, friends, sports, phone, homework"
                ],
                "tag": "for teens",
                "tags": ["teens"],
                "does": "uses teen-friendly tags",
                "why": [
                    "my 14-year-old agreed to track her mood if it 'doesn't look like a mom app'"
                ],
            },
            {
                "id": "energy",
                "add_fields": [extra(scale("energy", "Energy", 1, 5, 3))],
                "requests": [
                    "add an energy level next to the mood, they're not the same thing for me"
                ],
                "tag": "energy level",
                "does": "tracks energy separately from mood",
                "why": ["with long COVID my energy and my mood are two different stories"],
            },
            {
                "id": "journal",
                "add_fields": [extra(check("tojournal", "Copy to my journal"))],
                "scopes": ["journal.write"],
                "requests": ["let me copy the notes into my journal so I don't write things twice"],
                "tag": "journal sync",
                "does": "can copy notes into the journal",
                "why": ["I already keep a journal and hate writing the same thing twice"],
            },
            {
                "id": "twice",
                "set": {"prompts": ["Morning: how did you wake up?", "Evening: how did today go?"]},
                "requests": [
                    "I want a morning and an evening check-in, show a different prompt for each"
                ],
                "tag": "AM/PM check-ins",
                "does": "prompts a morning and an evening check-in",
                "why": ["my mornings and evenings are completely different people"],
            },
        ],
    }
)

# 7 ------------------------------------------------------------------------ budget
_BUDGET_CATS = [
    ["groceries", "Groceries"],
    ["kids", "Kids & school"],
    ["housing", "Housing"],
    ["transport", "Transport"],
    ["eating", "Eating out"],
    ["health", "Health"],
    ["fun", "Fun"],
    ["savings", "Savings"],
    ["other", "Other"],
    ["salary", "Salary"],
]
ROOTS.append(
    {
        "key": "family-budget",
        "title": "Family Budget",
        "short": "Family budget",
        "engine": "budget",
        "category": "finance",
        "popularity": 45,
        "gender": "f",
        "tags": ["budget", "money", "family"],
        "summary": "Income and spending for the month, with per-category limits that turn red.",
        "bio": "CPA, mom of two, spreadsheet enthusiast in recovery",
        "story": (
            "I'm an accountant and our family budget still lived in a spreadsheet nobody but me "
            "could open on a phone. This is the version my husband actually uses at the checkout: "
            "amount, category, done. The grocery bar turning red around the 20th has saved us more "
            "than any app subscription ever did."
        ),
        "scopes": ["finance.read", "finance.write"],
        "reminder": {"en": "Log today's spending while you remember 💸"},
        "i18n": {
            "zh": {"title": "家庭记账", "summary": "记录本月收支，各类别超预算会变红。"},
            "ja": {
                "title": "家計簿",
                "summary": "今月の収入と支出。カテゴリごとの予算を超えると赤に。",
            },
            "es": {
                "title": "Presupuesto Familiar",
                "summary": "Ingresos y gastos del mes con límites por categoría.",
            },
        },
        "config": {
            "currency": "USD",
            "limits": {"groceries": 900, "eating": 200, "fun": 150},
            "chartDays": 30,
            "fields": [
                select("kind", "Type", [["expense", "Expense"], ["income", "Income"]]),
                number("amount", "Amount", "", None, step=0.01),
                select("category", "Category", _BUDGET_CATS),
                text("note", "Note", maxlength=80),
                date("date", "Date"),
            ],
        },
        "forks": [
            {
                "id": "cad",
                "gender": "f",
                "when": {"currency": "USD"},
                "set": {"currency": "CAD", "locale": "en-CA"},
                "requests": ["we moved to Toronto — switch everything to Canadian dollars"],
                "tag": "CAD",
                "does": "works in Canadian dollars",
                "why": ["we relocated to Toronto for my husband's job"],
            },
            {
                "id": "mxn",
                "when": {"currency": "USD"},
                "set": {"currency": "MXN", "locale": "es-MX"},
                "requests": ["switch it to Mexican pesos, we live in Guadalajara now"],
                "es": [
                    "cámbialo a pesos mexicanos, por favor, vivimos en Guadalajara",
                    "¿lo puedes poner en pesos? ya regresamos a Monterrey",
                ],
                "tag": "MXN",
                "does": "works in Mexican pesos",
                "why": ["we moved back to Guadalajara to be near my parents"],
            },
            {
                "id": "limits",
                "set": {"limits": {"groceries": 1200, "eating": 100, "fun": 150}},
                "requests": [
                    "grocery prices are insane — raise groceries to $1,200 and cut eating out to $100"
                ],
                "tag": "new limits",
                "does": "raises the grocery limit and cuts eating out",
                "why": ["our grocery bill went up 30% in a year"],
                "changelog": "Grocery limit raised to 1,200; eating out cut to 100.",
            },
            {
                "id": "paidby",
                "add_fields": [
                    extra(
                        select(
                            "paidBy",
                            "Paid by",
                            [["me", "Me"], ["partner", "Partner"], ["joint", "Joint account"]],
                        )
                    )
                ],
                "requests": ["add who paid — me, my partner or the joint account"],
                "tag": "who paid",
                "does": "records who paid for each expense",
                "why": ["we split some bills and pool others, and it got confusing fast"],
            },
            {
                "id": "daycare",
                "append": {"fields.category.options": [["daycare", "Daycare"]]},
                "set": {"limits.daycare": 1600},
                "requests": [
                    "daycare is our biggest expense, give it its own category with a $1,600 limit"
                ],
                "tag": "daycare line",
                "does": "gives daycare its own category and limit",
                "why": [
                    "daycare costs more than our mortgage and I want to see it on its own line"
                ],
            },
            {
                "id": "sidegig",
                "append": {"fields.category.options": [["etsy", "Etsy shop"]]},
                "requests": ["add a category for my Etsy shop income and supplies"],
                "tag": "side hustle",
                "does": "tracks a side business separately",
                "why": ["my candle shop on Etsy finally makes real money"],
            },
        ],
    }
)

# 8 ------------------------------------------------------------------------ running
ROOTS.append(
    {
        "key": "running-log",
        "title": "Running Log",
        "short": "Running log",
        "engine": "distance",
        "category": "fitness",
        "popularity": 42,
        "gender": "f",
        "tags": ["running", "cardio", "training"],
        "summary": "Distance, time and pace for every run, against a weekly goal.",
        "bio": "5 a.m. runner, two half marathons, one very patient stroller",
        "story": (
            "I run at 5 a.m. before the kids wake up, so the last thing I want is a watch app "
            "asking me to sync. I type distance and minutes, it works out the pace and shows how "
            "far I am from my 20 km week. It's been with me through two half marathons."
        ),
        "scopes": ["fitness.read", "fitness.write"],
        "reminder": {"en": "Shoes by the door? Run tomorrow morning 🏃‍♀️"},
        "weather_ok": True,
        "config": {
            "unit": "km",
            "weeklyGoal": 20,
            "co2PerUnit": 0,
            "chartDays": 14,
            "fields": [
                date("date", "Date"),
                number("distance", "Distance", "km", None, step=0.1),
                number("minutes", "Minutes", "min", None, step=1),
                text("route", "Route", extra=True, maxlength=60),
            ],
        },
        "forks": [
            {
                "id": "miles",
                "when": {"unit": "km"},
                "set": {"unit": "mi", "weeklyGoal": 12, "fields.distance.unit": "mi"},
                "requests": [
                    "miles please, I can't think in kilometres",
                    "switch to miles and a 12-mile week",
                ],
                "tag": "miles",
                "does": "uses miles and a 12-mile weekly goal",
                "why": ["every race I sign up for in Texas is in miles"],
            },
            {
                "id": "halfplan",
                "set": {"weeklyGoal": 35},
                "add_fields": [
                    extra(
                        select(
                            "kind",
                            "Run type",
                            [
                                ["easy", "Easy"],
                                ["tempo", "Tempo"],
                                ["long", "Long run"],
                                ["intervals", "Intervals"],
                            ],
                        )
                    )
                ],
                "requests": [
                    "I'm training for a half marathon — 35 km weeks and tag each run as easy, tempo, long or intervals",
                    "I'm vegetarian and training for a half marathon, add run types and raise the weekly goal",
                ],
                "tag": "half-marathon block",
                "does": "tags run types for a half-marathon block",
                "why": ["I signed up for the Toronto Waterfront Half on a whim"],
            },
            {
                "id": "shoes",
                "add_fields": [extra(text("shoes", "Shoes", maxlength=40))],
                "requests": [
                    "track which shoes I wore, they die around 500 km and I never know when"
                ],
                "tag": "shoe mileage",
                "does": "records which shoes each run used",
                "why": ["my shins told me my shoes were dead before I did"],
            },
            {
                "id": "stroller",
                "add_fields": [extra(check("stroller", "Stroller run"))],
                "requests": [
                    "add a stroller-run checkbox, my pace is way slower pushing 30 lb of toddler"
                ],
                "tag": "stroller runs",
                "does": "marks stroller runs so slower paces make sense",
                "why": ["pushing a jogging stroller adds a full minute per kilometre"],
            },
            {
                "id": "knee",
                "add_fields": [
                    extra(
                        scale(
                            "knee",
                            "Knee pain (0–10)",
                            0,
                            10,
                            0,
                            warnAbove=4,
                            warning="Knee pain is up — easy run or rest day.",
                        )
                    )
                ],
                "scopes": ["health.injuries.read"],
                "requests": [
                    "my knee is acting up — add a pain slider and warn me over 4, it can read my injury log"
                ],
                "tag": "knee watch",
                "does": "tracks knee pain and flags bad days",
                "why": ["runner's knee kept me out for six weeks last fall"],
            },
        ],
    }
)

# 9 ------------------------------------------------------------------------ calories
ROOTS.append(
    {
        "key": "calorie-log",
        "title": "Calorie & Macro Log",
        "short": "Calorie and macro log",
        "engine": "nutrition",
        "category": "diet",
        "popularity": 40,
        "gender": None,
        "tags": ["calories", "macros", "nutrition"],
        "summary": "Log meals with calories and macros; today's totals against your targets.",
        "bio": "recovering takeout addict, learning to cook at 35",
        "story": (
            "I was eating takeout five nights a week and had no idea what that added up to. "
            "I didn't want a barcode database or an ad every third tap — just a place to write "
            "down what I ate and see protein, carbs and fat against a target. Three months in, "
            "I cook most nights and actually hit my protein."
        ),
        "scopes": ["diet.read", "diet.write"],
        "reminder": {"en": "Log your last meal while it's fresh 🥗"},
        "config": {
            "targets": {"kcal": 2000, "protein": 90, "carbs": 230, "fat": 70},
            "chartDays": 7,
            "fields": [
                text("food", "Food", maxlength=80),
                select(
                    "meal",
                    "Meal",
                    [
                        ["breakfast", "Breakfast"],
                        ["lunch", "Lunch"],
                        ["dinner", "Dinner"],
                        ["snack", "Snack"],
                    ],
                ),
                number("kcal", "Calories", "kcal", None),
                number("protein", "Protein", "g", None),
                number("carbs", "Carbs", "g", None),
                number("fat", "Fat", "g", None),
            ],
        },
        "forks": [
            {
                "id": "vegrunner",
                "set": {"targets.kcal": 2400, "targets.protein": 110},
                "requests": [
                    "I'm vegetarian and training for a half marathon — 2,400 kcal and 110 g protein please"
                ],
                "tag": "vegetarian runner",
                "does": "targets 2,400 kcal and 110 g protein for training",
                "why": ["hitting protein as a vegetarian runner is a part-time job"],
            },
            {
                "id": "fiber",
                "add_fields": [extra(number("fiber", "Fiber", "g", None))],
                "set": {"targets.fiber": 30},
                "requests": ["add fiber with a 30 g target, my GI doctor insists"],
                "tag": "fiber",
                "does": "tracks fiber against 30 g a day",
                "why": ["my GI doctor said 30 g of fiber and I was at maybe 12"],
            },
            {
                "id": "sugar",
                "add_fields": [extra(number("sugar", "Added sugar", "g", None, limit=True))],
                "set": {"targets.sugar": 25},
                "requests": ["add added sugar with a 25 g limit that goes red"],
                "tag": "sugar limit",
                "does": "adds an added-sugar limit",
                "why": ["my A1C came back borderline"],
            },
            {
                "id": "diabetes",
                "set": {"targets.carbs": 150},
                "scopes": ["health.read"],
                "requests": [
                    "I have type 2 diabetes — set carbs to 150 g and let it read my health records"
                ],
                "tag": "lower-carb",
                "does": "uses a 150 g carb target",
                "why": ["I was diagnosed with type 2 diabetes last year"],
            },
            {
                "id": "nursing",
                "gender": "f",
                "set": {"targets.kcal": 2500, "targets.protein": 100},
                "requests": [
                    "breastfeeding twins — I need about 2,500 kcal, please raise the targets"
                ],
                "tag": "nursing",
                "does": "raises targets for breastfeeding",
                "why": ["nursing twins burns more than my old marathon training"],
            },
        ],
    }
)

# 10 ----------------------------------------------------------------------- baby feeding
ROOTS.append(
    {
        "key": "baby-feeding",
        "title": "Baby Feeding & Diaper Log",
        "short": "Baby log",
        "engine": "feeding",
        "category": "family",
        "popularity": 38,
        "gender": "f",
        "tags": ["baby", "newborn", "feeding"],
        "summary": "One-tap log for feeds, bottles and diapers, with time since the last feed.",
        "bio": "first-time mom, NICU grad's mom, runs on decaf",
        "story": (
            "Our son was in the NICU for nine days and the nurses asked for everything: which side, "
            "how many ml, how many wet diapers. At 3 a.m. I can't remember my own name, so I wanted "
            "big buttons and a clock that says how long since the last feed. My partner uses it too."
        ),
        "scopes": ["family.read", "family.write"],
        "reminder": {"en": "Feed due soon? 🍼", "ja": "そろそろ授乳の時間？🍼"},
        "config": {
            "unit": "ml",
            "babies": ["Baby"],
            "kinds": [
                ["left", "Left", "🤱", True, False],
                ["right", "Right", "🤱", True, False],
                ["bottle", "Bottle", "🍼", True, True],
                ["wet", "Wet diaper", "💧", False, False],
                ["dirty", "Dirty diaper", "💩", False, False],
            ],
            "fields": [
                number("amount", "Bottle amount", "ml", 90, step=10),
                text("note", "Note", extra=True, maxlength=80),
            ],
        },
        "forks": [
            {
                "id": "twins",
                "set": {"babies": ["Twin A", "Twin B"]},
                "add_fields": [
                    select("baby", "Baby", [["Twin A", "Twin A"], ["Twin B", "Twin B"]])
                ],
                "requests": ["TWINS. please let me pick which baby each feed was for"],
                "ja": ["双子なので、どちらの赤ちゃんの記録か選べるようにしてください"],
                "tag": "twins",
                "does": "logs each twin separately",
                "why": ["we have twins and I kept feeding the same one twice"],
            },
            {
                "id": "oz",
                "when": {"unit": "ml"},
                "set": {
                    "unit": "oz",
                    "fields.amount.unit": "oz",
                    "fields.amount.default": 3,
                    "fields.amount.step": 0.5,
                },
                "requests": ["bottles in oz please, our pediatrician talks in ounces"],
                "tag": "oz",
                "does": "measures bottles in ounces",
                "why": ["our pediatrician and every bottle in the US are in ounces"],
            },
            {
                "id": "pump",
                "gender": "f",
                "append": {"kinds": [["pump", "Pumped", "🧴", False, True]]},
                "requests": ["add a pumping button with the amount, I'm back at work and pumping"],
                "tag": "pumping",
                "does": "adds a pumping log",
                "why": ["I went back to work at 12 weeks and pump three times a day"],
            },
            {
                "id": "vitd",
                "append": {"kinds": [["vitd", "Vitamin D", "☀️", False, False]]},
                "scopes": ["health.medications.read"],
                "requests": ["add a vitamin D drops button, I can never remember if I gave them"],
                "tag": "vitamin D",
                "does": "adds a vitamin D drops button",
                "why": ["I can never remember if I gave the vitamin D drops"],
            },
        ],
    }
)

# 11 ----------------------------------------------------------------------- moving
ROOTS.append(
    {
        "key": "moving-checklist",
        "title": "Moving-to-a-New-City Checklist",
        "short": "Moving checklist",
        "engine": "checklist",
        "category": "family",
        "popularity": 36,
        "gender": "f",
        "tags": ["moving", "relocation", "checklist"],
        "summary": "Everything for a family move, with due dates counted back from moving day.",
        "bio": "moved four times in six years for my husband's job, kids 6 and 9",
        "story": (
            "We've moved four times in six years for my husband's job and I always forget "
            "something — last time it was the kids' school records. I had my agent turn my messy "
            "notes into a checklist where every task has a due date counted from moving day. "
            "Friends borrow it every time someone gets relocated."
        ),
        "scopes": ["home.read", "home.write", "calendar.read"],
        "reminder": {"en": "One moving task today keeps the panic away 📦"},
        "config": {
            "targetLabel": "Moving day",
            "sections": [
                {
                    "title": "Six weeks out",
                    "items": [
                        ["Get three moving quotes", -42],
                        ["Give notice to landlord", -40],
                        ["Request kids' school records", -35],
                        ["Declutter one room a week", -30],
                    ],
                },
                {
                    "title": "Moving week",
                    "items": [
                        ["Forward mail", -7],
                        ["Pack an open-first box", -2],
                        ["Defrost the freezer", -1],
                        ["Take meter photos", 0],
                    ],
                },
                {
                    "title": "After arrival",
                    "items": [
                        ["Register kids at school", 3],
                        ["Update driver's licence address", 10],
                        ["Find a family doctor", 14],
                    ],
                },
            ],
            "fields": [
                text("text", "New task", maxlength=80),
                select("section", "Section", []),
                number("offset", "Days from moving day", "", 0, lo=-120, hi=120),
            ],
        },
        "forks": [
            {
                "id": "toronto",
                "append": {
                    "sections": [
                        {
                            "title": "Canada paperwork",
                            "items": [
                                ["Apply for OHIP health cards", 1],
                                ["Get a SIN", 3],
                                ["Open a Canadian bank account", 5],
                                ["Exchange driver's licence (60-day limit)", 30],
                                ["Register for the Canada Child Benefit", 14],
                            ],
                        }
                    ]
                },
                "title": "Moving-to-Toronto Checklist",
                "requests": [
                    "I'm moving to Toronto from Chicago with two kids — add the Canadian paperwork",
                    "moving to Ontario for work, add health cards, SIN and the licence exchange",
                ],
                "tag": "(Toronto edition)",
                "tags": ["toronto", "canada"],
                "does": "adds Canadian paperwork: OHIP, SIN, licence exchange",
                "why": ["my company is transferring us from Chicago to Toronto in August"],
            },
            {
                "id": "pets",
                "append": {
                    "sections": [
                        {
                            "title": "Pets",
                            "items": [
                                ["Get vet records", -21],
                                ["Buy a travel crate", -14],
                                ["Find a new vet", 7],
                            ],
                        }
                    ]
                },
                "scopes": ["pets.read"],
                "requests": ["we're bringing a dog and two cats — add pet stuff"],
                "tag": "with pets",
                "does": "adds vet records, crates and a new vet",
                "why": ["the cats hid in the box spring during our last move"],
            },
            {
                "id": "mexico",
                "append": {
                    "sections": [
                        {
                            "title": "México",
                            "items": [
                                ["Tramitar la CURP de los niños", 14],
                                ["Abrir cuenta bancaria", 7],
                                ["Contratar internet", 2],
                            ],
                        }
                    ]
                },
                "requests": [
                    "moving back to Mexico City — add CURP for the kids, bank and internet"
                ],
                "es": [
                    "nos mudamos a la Ciudad de México, agrega la CURP de los niños, banco e internet"
                ],
                "tag": "(CDMX)",
                "does": "adds Mexico City paperwork",
                "why": ["after ten years in Houston we're moving back to Mexico City"],
            },
            {
                "id": "college",
                "set": {"targetLabel": "Move-in day"},
                "append": {
                    "sections": [
                        {
                            "title": "Dorm",
                            "items": [
                                ["Buy twin XL sheets", -20],
                                ["Label everything", -5],
                                ["Set up campus health insurance", -10],
                            ],
                        }
                    ]
                },
                "title": "College Move-in Checklist",
                "requests": [
                    "turn this into a dorm move-in list for my son starting college in September"
                ],
                "tag": "college move-in",
                "tags": ["college"],
                "does": "adapts the list for a dorm move-in",
                "why": ["my oldest starts at UBC in September and I'm not crying, you are"],
            },
        ],
    }
)

# 12 ----------------------------------------------------------------------- chores
_CHORES = [
    ["dishes", "Unload dishwasher (+3)", 3],
    ["room", "Tidy room (+2)", 2],
    ["pets", "Feed the dog (+1)", 1],
    ["laundry", "Fold laundry (+3)", 3],
    ["trash", "Take out trash (+2)", 2],
    ["table", "Set the table (+1)", 1],
]
ROOTS.append(
    {
        "key": "chore-chart",
        "title": "Kids' Chore Chart",
        "short": "Chore chart",
        "engine": "chores",
        "category": "family",
        "popularity": 34,
        "gender": "f",
        "tags": ["chores", "kids", "rewards"],
        "summary": "Kids earn points for chores; a weekly reward and optional pocket money.",
        "bio": "mom of 7- and 10-year-olds, fridge-chart veteran",
        "story": (
            "Our fridge chart kept getting stickers 'borrowed' by the younger one. Now the kids "
            "log their own chores on the tablet and the week resets itself. At 30 points they pick "
            "the Friday movie, and each point is worth a quarter — which has done wonders for the "
            "dishwasher."
        ),
        "scopes": ["family.read", "home.read", "home.write"],
        "reminder": {"en": "Chore check: what got done today? ✅"},
        "config": {
            "people": ["Big sis", "Little bro"],
            "chores": [[c[0], c[1], c[2]] for c in _CHORES],
            "pointValue": 0.25,
            "rewardAt": 30,
            "rewardLabel": "Friday movie pick",
            "currency": "USD",
            "fields": [
                select("who", "Who", [["Big sis", "Big sis"], ["Little bro", "Little bro"]]),
                select("chore", "Chore", [[c[0], c[1]] for c in _CHORES]),
            ],
        },
        "forks": [
            {
                "id": "three",
                "set": {
                    "people": ["Oldest", "Middle", "Baby sis"],
                    "fields.who.options": [
                        ["Oldest", "Oldest"],
                        ["Middle", "Middle"],
                        ["Baby sis", "Baby sis"],
                    ],
                },
                "requests": ["we have three kids now, add a third column for the little one"],
                "tag": "three kids",
                "does": "handles three kids",
                "why": ["our youngest turned five and demands chores like the big kids"],
            },
            {
                "id": "screen",
                "set": {"rewardLabel": "30 min extra screen time", "pointValue": 0},
                "requests": ["no money — make the reward 30 minutes extra screen time instead"],
                "tag": "screen-time rewards",
                "does": "rewards screen time instead of cash",
                "why": ["paying for chores turned my kids into tiny contract lawyers"],
            },
            {
                "id": "teen",
                "append": {
                    "chores": [["mow", "Mow the lawn (+5)", 5], ["sit", "Babysit (+6)", 6]],
                    "fields.chore.options": [["mow", "Mow the lawn (+5)"], ["sit", "Babysit (+6)"]],
                },
                "set": {"pointValue": 0.5},
                "requests": [
                    "my kids are teens now — add mowing and babysitting, and 50 cents a point"
                ],
                "tag": "teen chores",
                "does": "adds bigger teen chores and raises the point value",
                "why": [
                    "the kids are 13 and 15 and folding laundry for a quarter isn't cutting it"
                ],
            },
            {
                "id": "dog",
                "append": {
                    "chores": [["walk", "Walk the dog (+2)", 2]],
                    "fields.chore.options": [["walk", "Walk the dog (+2)"]],
                },
                "scopes": ["pets.read"],
                "requests": ["we got a puppy! add 'walk the dog' as a chore"],
                "tag": "puppy edition",
                "does": "adds dog walks to the chore list",
                "why": ["we got a puppy and the kids swore they'd walk him"],
            },
        ],
    }
)

# 13 ----------------------------------------------------------------------- wine
_VARIETALS = [
    ["cab", "Cabernet Sauvignon"],
    ["pinot", "Pinot Noir"],
    ["chard", "Chardonnay"],
    ["riesling", "Riesling"],
    ["tempranillo", "Tempranillo"],
    ["syrah", "Syrah"],
    ["other", "Other"],
]
ROOTS.append(
    {
        "key": "wine-journal",
        "title": "Wine Journal",
        "short": "Wine journal",
        "engine": "journal",
        "category": "hobby",
        "popularity": 33,
        "gender": "f",
        "tags": ["wine", "tasting", "journal"],
        "summary": "Rate the bottles you open, remember what you loved and what it cost.",
        "bio": "wine lover, book club host, Napa twice a year",
        "story": (
            "I'm a wine lover who could never remember the name of that Pinot we loved at my "
            "sister's. Now every bottle gets a rating, the grape, the region and what we paid. "
            "The 'top rated' list is what I pull up in the wine shop, and book club thinks I'm "
            "a sommelier."
        ),
        "scopes": ["hobby.read", "hobby.write"],
        "config": {
            "currency": "USD",
            "priceField": "price",
            "detailFields": ["varietal", "region", "year", "price"],
            "fields": [
                text("name", "Wine", maxlength=80),
                select("rating", "Rating", STARS, default="4"),
                select("varietal", "Grape", _VARIETALS),
                text("region", "Region", maxlength=60),
                number("year", "Vintage", "", None, lo=1950, hi=2030),
                number("price", "Price", "", None, step=0.01, money=True),
                area("notes", "Notes", maxlength=300),
            ],
        },
        "forks": [
            {
                "id": "natural",
                "unless": ["sake", "whisky"],
                "add_fields": [extra(check("natural", "Natural / low-intervention"))],
                "requests": ["add a natural-wine checkbox, it's most of what I drink now"],
                "tag": "natural wine",
                "does": "flags natural and low-intervention wines",
                "why": ["I fell down the natural-wine rabbit hole in Montreal"],
            },
            {
                "id": "pairing",
                "add_fields": [extra(text("paired", "Paired with", maxlength=60))],
                "requests": ["add what we ate with it, pairing is half the fun"],
                "tag": "food pairing",
                "does": "records what each wine was paired with",
                "why": ["I cook a themed dinner every Friday and want to remember the pairings"],
            },
            {
                "id": "sake",
                "unless": ["whisky"],
                "set": {
                    "fields.varietal.options": [
                        ["junmai", "Junmai"],
                        ["ginjo", "Ginjo"],
                        ["daiginjo", "Daiginjo"],
                        ["nigori", "Nigori"],
                        ["honjozo", "Honjozo"],
                    ],
                    "fields.varietal.label": "Style",
                    "fields.name.label": "Sake",
                },
                "title": "Sake Journal",
                "tags": ["sake"],
                "requests": ["turn it into a sake journal — junmai, ginjo, daiginjo, nigori"],
                "ja": ["日本酒ノートにしてください。純米・吟醸・大吟醸・にごりで分けたいです"],
                "tag": "sake",
                "does": "tracks sake by style",
                "why": ["after a trip to Niigata I only want to drink sake"],
            },
            {
                "id": "whisky",
                "gender": "f",
                "unless": ["sake"],
                "set": {
                    "fields.varietal.options": [
                        ["islay", "Islay"],
                        ["speyside", "Speyside"],
                        ["bourbon", "Bourbon"],
                        ["rye", "Rye"],
                        ["japanese", "Japanese"],
                    ],
                    "fields.varietal.label": "Style",
                    "fields.name.label": "Whisky",
                },
                "title": "Whisky Journal",
                "tags": ["whisky"],
                "requests": [
                    "make a whisky version for my husband — Islay, Speyside, bourbon, rye, Japanese"
                ],
                "tag": "whisky",
                "does": "tracks whisky by style",
                "why": ["my husband's whisky shelf needed its own journal"],
            },
            {
                "id": "again",
                "add_fields": [extra(check("again", "Would buy again"))],
                "requests": ["add a 'would buy again' checkbox — ratings alone don't tell me that"],
                "tag": "buy-again list",
                "does": "marks bottles worth buying again",
                "why": ["a 4-star $60 bottle is not a 4-star $14 bottle"],
                "changelog": "Added a 'would buy again' checkbox.",
            },
            {
                "id": "cad",
                "when": {"currency": "USD"},
                "set": {"currency": "CAD", "locale": "en-CA"},
                "requests": ["prices in Canadian dollars please, I buy at the LCBO"],
                "tag": "CAD",
                "does": "shows prices in Canadian dollars",
                "why": ["everything I buy comes from the LCBO"],
            },
        ],
    }
)

# 14 ----------------------------------------------------------------------- tennis
_TENNIS = [
    ["serve1", "First serves in", 65],
    ["serve2", "Second serves in", 90],
    ["bhcc", "Backhand cross-court", 70],
    ["volley", "Volleys", 75],
    ["return", "Returns in play", 80],
]
ROOTS.append(
    {
        "key": "tennis-practice-log",
        "title": "Tennis Practice Log",
        "short": "Tennis practice log",
        "engine": "drills",
        "category": "fitness",
        "popularity": 30,
        "gender": "f",
        "tags": ["tennis", "drills", "practice"],
        "summary": "Drill-by-drill accuracy against targets, plus weekly court time.",
        "bio": "ex-college tennis player, mom of two, 4.5 league captain",
        "story": (
            "I played college tennis, then had two kids and didn't touch a racquet for eight "
            "years. Now I'm captain of a 4.5 league team and the one thing that fixed my game was "
            "counting: 50 first serves, how many in. The targets are what my old college coach used."
        ),
        "scopes": ["fitness.read", "fitness.write"],
        "weather_ok": True,
        "config": {
            "drills": [[d[0], d[1], d[2]] for d in _TENNIS],
            "weeklyMinutes": 240,
            "chartDays": 14,
            "fields": [
                select("drill", "Drill", [[d[0], d[1]] for d in _TENNIS]),
                number("attempts", "Attempts", "", 50),
                number("made", "Made", "", 30),
                number("minutes", "Minutes", "min", 45),
            ],
        },
        "forks": [
            {
                "id": "pickleball",
                "unless": ["junior"],
                "set": {
                    "drills": [
                        ["dink", "Cross-court dinks", 85],
                        ["drop", "Third-shot drops", 60],
                        ["serve", "Serves in", 95],
                        ["return", "Deep returns", 75],
                    ],
                    "fields.drill.options": [
                        ["dink", "Cross-court dinks"],
                        ["drop", "Third-shot drops"],
                        ["serve", "Serves in"],
                        ["return", "Deep returns"],
                    ],
                },
                "title": "Pickleball Practice Log",
                "tags": ["pickleball"],
                "requests": [
                    "my knees prefer pickleball now — swap in dinks, third-shot drops and serves"
                ],
                "tag": "pickleball",
                "does": "tracks pickleball drills",
                "why": ["my knees voted for pickleball"],
            },
            {
                "id": "surface",
                "add_fields": [
                    extra(
                        select(
                            "surface",
                            "Surface",
                            [
                                ["hard", "Hard"],
                                ["clay", "Clay"],
                                ["grass", "Grass"],
                                ["indoor", "Indoor"],
                            ],
                        )
                    )
                ],
                "requests": ["add the court surface, my serve percentage tanks on clay"],
                "tag": "court surface",
                "does": "records the court surface",
                "why": ["our club switched half the courts to Har-Tru and my serve fell apart"],
            },
            {
                "id": "junior",
                "gender": "f",
                "unless": ["pickleball"],
                "set": {
                    "drills": [
                        ["serve1", "First serves in", 50],
                        ["rally", "10-ball rallies", 60],
                        ["fh", "Forehand targets", 55],
                    ],
                    "fields.drill.options": [
                        ["serve1", "First serves in"],
                        ["rally", "10-ball rallies"],
                        ["fh", "Forehand targets"],
                    ],
                    "weeklyMinutes": 120,
                },
                "title": "Junior Tennis Log",
                "tags": ["kids"],
                "requests": [
                    "make it for my 11-year-old — easier targets, rallies and forehands, 2 hours a week"
                ],
                "tag": "junior",
                "does": "uses kid-sized drills and targets",
                "why": ["my 11-year-old just made the junior team and wants to track like mom"],
            },
            {
                "id": "elbow",
                "add_fields": [
                    extra(
                        scale(
                            "elbow",
                            "Elbow pain (0–10)",
                            0,
                            10,
                            0,
                            warnAbove=4,
                            warning="Elbow is flaring — skip serves today.",
                        )
                    )
                ],
                "scopes": ["health.injuries.read"],
                "requests": [
                    "tennis elbow is back — add a pain slider and tell me to skip serves if it's over 4"
                ],
                "tag": "tennis-elbow watch",
                "does": "tracks elbow pain and warns on bad days",
                "why": ["tennis elbow kept me off court for two months"],
            },
            {
                "id": "partner",
                "add_fields": [extra(text("partner", "Hitting partner", maxlength=40))],
                "requests": ["add who I hit with, I practise better with some people than others"],
                "tag": "hitting partners",
                "does": "records the hitting partner",
                "why": ["I play better with my Tuesday partner and want to see if it's real"],
            },
        ],
    }
)

# 15 ----------------------------------------------------------------------- study planner
ROOTS.append(
    {
        "key": "study-planner",
        "title": "Exam Study Planner",
        "short": "Study planner",
        "engine": "studyplan",
        "category": "study",
        "popularity": 29,
        "gender": None,
        "tags": ["study", "exams", "planning"],
        "summary": "Add exams and hours needed; get today's plan capped at what fits in a day.",
        "bio": "nursing student at 34, two kids, lots of flashcards",
        "story": (
            "I went back to school for nursing at 34 with two kids at home. Four exams in the same "
            "week nearly broke me, so I had my agent build a planner that spreads the hours I still "
            "need across the days left and caps it at three hours a day — because that's all I've got."
        ),
        "scopes": ["study.read", "study.write"],
        "reminder": {"en": "Today's study block is waiting 📚"},
        "config": {
            "maxHoursPerDay": 3,
            "chartDays": 14,
            "fields": [
                text("subject", "Exam / subject", maxlength=60),
                date("date", "Exam date"),
                number("hours", "Hours needed", "h", 10, step=0.5),
            ],
        },
        "forks": [
            {
                "id": "mom",
                "gender": "f",
                "set": {"maxHoursPerDay": 1.5},
                "requests": ["I'm a mom doing a degree at night — cap it at 1.5 hours a day"],
                "tag": "1.5 h/day",
                "does": "caps study at 1.5 hours a day",
                "why": ["between daycare pickup and bedtime I get 90 minutes, max"],
            },
            {
                "id": "mcat",
                "set": {"maxHoursPerDay": 6},
                "requests": ["MCAT prep, I'm studying full time — let it plan up to 6 hours a day"],
                "tag": "MCAT mode",
                "does": "allows up to six hours a day",
                "why": ["I took a gap year to study for the MCAT full time"],
            },
            {
                "id": "calendar",
                "scopes": ["calendar.write"],
                "set": {"maxHoursPerDay": 2},
                "requests": ["put the study blocks into my calendar and keep it to 2 hours a day"],
                "tag": "calendar blocks",
                "does": "keeps study to two hours and can block calendar time",
                "why": ["if it isn't in my calendar, it doesn't exist"],
            },
        ],
    }
)

# 16 ----------------------------------------------------------------------- reading
ROOTS.append(
    {
        "key": "kids-reading-log",
        "title": "Kids' Reading Log",
        "short": "Reading log",
        "engine": "tally",
        "category": "study",
        "popularity": 28,
        "gender": "f",
        "tags": ["reading", "kids", "school"],
        "summary": "Reading minutes per child, towards the 20-minutes-a-night school goal.",
        "bio": "elementary-school librarian, mom of two bookworms",
        "story": (
            "Our school wants 20 minutes of reading a night, signed by a parent, and the paper log "
            "lives at the bottom of a backpack. The kids tap their own minutes and the book title, "
            "and I screenshot the week for their teacher. My youngest now reads just to beat his sister."
        ),
        "scopes": ["study.read", "study.write", "family.read"],
        "reminder": {"en": "Reading time! 20 minutes before bed 📖", "zh": "睡前读书 20 分钟 📖"},
        "i18n": {
            "zh": {
                "title": "孩子阅读打卡",
                "summary": "每个孩子的阅读分钟数，完成学校每晚 20 分钟的目标。",
            },
            "es": {
                "title": "Registro de Lectura",
                "summary": "Minutos de lectura por niño para la meta de 20 al día.",
            },
        },
        "config": {
            "unit": "min",
            "goal": 20,
            "goalMode": "atLeast",
            "quick": [10, 15, 20, 30],
            "chartDays": 7,
            "groupBy": "reader",
            "fields": [
                number("amount", "Minutes", "min", 20, step=5),
                select(
                    "reader", "Reader", [["oldest", "Oldest"], ["youngest", "Youngest"]], extra=True
                ),
                text("book", "Book", extra=True, maxlength=80),
            ],
        },
        "forks": [
            {
                "id": "summer",
                "set": {"goal": 30},
                "requests": ["summer reading challenge: 30 minutes a day"],
                "tag": "summer challenge",
                "does": "raises the goal to 30 minutes for summer",
                "why": ["the library summer challenge is 30 minutes a day"],
            },
            {
                "id": "pages",
                "set": {
                    "unit": "pages",
                    "goal": 25,
                    "quick": [5, 10, 25],
                    "fields.amount.unit": "pages",
                    "fields.amount.label": "Pages",
                },
                "requests": [
                    "count pages instead of minutes — my daughter reads fast and minutes feel unfair to her"
                ],
                "tag": "pages",
                "does": "counts pages instead of minutes",
                "why": ["my speed-reader thinks counting minutes is an injustice"],
            },
            {
                "id": "mandarin",
                "append": {"fields.reader.options": [["me", "Me"]]},
                "add_fields": [
                    extra(select("lang", "Language", [["en", "English"], ["zh", "中文"]]))
                ],
                "requests": [
                    "we read in English and Mandarin at home — add the language of each book"
                ],
                "zh": ["我们在家中英文都读，加个书的语言选项吧，我也想一起打卡"],
                "tag": "bilingual",
                "does": "records the language of each book",
                "why": ["we're raising the kids bilingual and Mandarin reading always loses"],
            },
        ],
    }
)

# 17 ----------------------------------------------------------------------- bedtime routine
ROOTS.append(
    {
        "key": "bedtime-routine",
        "title": "Kids' Bedtime Routine",
        "short": "Bedtime routine",
        "engine": "habit",
        "category": "sleep",
        "popularity": 26,
        "gender": "f",
        "tags": ["bedtime", "kids", "routine"],
        "summary": "A tick-the-box bedtime routine with streaks the kids actually care about.",
        "bio": "pediatric OT, mom of a 4- and 6-year-old",
        "story": (
            "Bedtime was a 90-minute negotiation. I'm a pediatric OT, so I know routines work — "
            "the trick was making the kids tick the boxes themselves. The streak counter is pure "
            "bribery and I regret nothing. Lights out by 8 is now real most nights."
        ),
        "scopes": ["sleep.read", "sleep.write", "family.read"],
        "reminder": {"en": "Bath time in 10 minutes 🛁"},
        "i18n": {
            "zh": {"title": "孩子睡前习惯", "summary": "孩子自己打勾的睡前流程，还有连续天数。"},
            "ja": {
                "title": "子どもの寝る前ルーティン",
                "summary": "子どもが自分でチェックする寝る前の習慣と連続記録。",
            },
            "es": {
                "title": "Rutina para Dormir",
                "summary": "La rutina de la noche con palomitas y rachas.",
            },
        },
        "config": {
            "habits": [
                ["bath", "Bath"],
                ["teeth", "Brush teeth"],
                ["story", "Story time"],
                ["lights", "Lights out by 8"],
                ["screens", "No screens after dinner"],
            ],
            "chartDays": 14,
            "fields": [text("label", "New habit", maxlength=40)],
        },
        "forks": [
            {
                "id": "potty",
                "unless": ["teen", "adult"],
                "append": {"habits": [["potty", "Potty before bed"]]},
                "requests": ["add 'potty before bed', we're night-training the 3-year-old"],
                "tag": "potty training",
                "does": "adds a potty step for night training",
                "why": ["we're night-training our three-year-old"],
            },
            {
                "id": "teen",
                "unless": ["potty", "adult"],
                "set": {
                    "habits": [
                        ["phone", "Phone charging outside room"],
                        ["bag", "Bag packed for tomorrow"],
                        ["lights", "Lights out by 10"],
                    ]
                },
                "title": "Teen Evening Routine",
                "requests": [
                    "my kids are 13 and 15 — phone out of the room, bag packed, lights out by 10"
                ],
                "tag": "teen version",
                "does": "switches to a teen evening routine",
                "why": ["my teens need a routine just as much, they just hate the word"],
            },
            {
                "id": "adult",
                "unless": ["potty", "teen"],
                "set": {
                    "habits": [
                        ["tea", "Herbal tea"],
                        ["stretch", "Stretch"],
                        ["book", "Read a real book"],
                        ["lights", "Lights out by 10:30"],
                    ]
                },
                "title": "My Wind-down Routine",
                "requests": [
                    "make one for me: herbal tea, stretching, a real book, lights out by 10:30"
                ],
                "tag": "for grown-ups",
                "does": "turns it into a grown-up wind-down routine",
                "why": ["the kids' routine worked so well I wanted one for myself"],
            },
        ],
    }
)

# 18 ----------------------------------------------------------------------- habits
ROOTS.append(
    {
        "key": "tiny-habits",
        "title": "Tiny Habits Grid",
        "short": "Habit grid",
        "engine": "habit",
        "category": "mood",
        "popularity": 25,
        "gender": None,
        "tags": ["habits", "streaks", "wellbeing"],
        "summary": "Five small daily habits in a two-week grid. Tap to tick, watch the streaks.",
        "bio": "product designer, morning-pages person, plant parent",
        "story": (
            "I read the tiny-habits book and then failed at every habit app because they wanted "
            "too much. Two weeks of tiny boxes is the whole thing. Seeing a broken streak in a grid "
            "bothers me just enough to do the ten-minute walk."
        ),
        "scopes": ["mood.read", "mood.write"],
        "config": {
            "habits": [
                ["walk", "10-minute walk"],
                ["read", "Read 10 pages"],
                ["water", "Glass of water first"],
                ["phone", "No phone in bed"],
                ["call", "Text a friend"],
            ],
            "chartDays": 14,
            "fields": [text("label", "New habit", maxlength=40)],
        },
        "forks": [
            {
                "id": "ramadan",
                "set": {
                    "habits": [
                        ["suhoor", "Suhoor"],
                        ["quran", "Read Quran"],
                        ["taraweeh", "Taraweeh"],
                        ["charity", "Sadaqah"],
                    ],
                    "chartDays": 30,
                },
                "title": "Ramadan Habit Grid",
                "requests": [
                    "for Ramadan: suhoor, Quran reading, taraweeh and charity, over 30 days"
                ],
                "tag": "Ramadan",
                "tags": ["ramadan"],
                "does": "tracks Ramadan habits over 30 days",
                "why": ["I wanted to track Ramadan with my kids this year"],
            },
            {
                "id": "sober",
                "append": {"habits": [["nodrink", "Alcohol-free day"]]},
                "requests": ["add 'alcohol-free day', I'm doing Dry January"],
                "tag": "Dry January",
                "does": "adds alcohol-free days",
                "why": ["I'm doing Dry January and want the streak"],
            },
        ],
    }
)

# 19 ----------------------------------------------------------------------- screen time
ROOTS.append(
    {
        "key": "screen-time",
        "title": "Kids' Screen Time",
        "short": "Screen-time tracker",
        "engine": "tally",
        "category": "family",
        "popularity": 24,
        "gender": "f",
        "tags": ["screen-time", "kids", "limits"],
        "summary": "Log screen minutes per kid against a daily limit that turns red.",
        "bio": "mom of three gamers, former middle-school teacher",
        "story": (
            "Every evening in our house was an argument about who had more screen time. Now each of "
            "my kids logs their own minutes and the bar goes red at two hours. I'm not trying to "
            "police them — the numbers just settle the argument instead of me."
        ),
        "scopes": ["family.read", "family.write"],
        "config": {
            "unit": "min",
            "goal": 120,
            "goalMode": "atMost",
            "quick": [15, 30, 60],
            "chartDays": 7,
            "groupBy": "who",
            "fields": [
                number("amount", "Minutes", "min", 30, step=5),
                select(
                    "who",
                    "Who",
                    [["oldest", "Oldest"], ["middle", "Middle"], ["youngest", "Youngest"]],
                    extra=True,
                ),
                select(
                    "device",
                    "Device",
                    [
                        ["tablet", "Tablet"],
                        ["tv", "TV"],
                        ["console", "Console"],
                        ["phone", "Phone"],
                    ],
                    extra=True,
                ),
            ],
        },
        "forks": [
            {
                "id": "school",
                "set": {"goal": 60},
                "requests": ["school nights should be 60 minutes max"],
                "tag": "school-night limit",
                "does": "uses a 60-minute school-night limit",
                "why": ["grades slipped in the fall and we cut weekday screens"],
            },
            {
                "id": "homework",
                "append": {"fields.device.options": [["homework", "Homework (doesn't count)"]]},
                "requests": [
                    "add 'homework' as a device type, Chromebook homework shouldn't count against them"
                ],
                "tag": "homework exempt",
                "does": "lets homework screen time be logged separately",
                "why": ["half their screen time is Chromebook homework"],
            },
        ],
    }
)

# 20 ----------------------------------------------------------------------- caffeine
ROOTS.append(
    {
        "key": "caffeine-counter",
        "title": "Caffeine Counter",
        "short": "Caffeine counter",
        "engine": "tally",
        "category": "diet",
        "popularity": 22,
        "gender": None,
        "tags": ["caffeine", "coffee", "limits"],
        "summary": "Espresso, coffee, tea and energy drinks against a 400 mg daily limit.",
        "bio": "ICU nurse, coffee is a personality trait",
        "story": (
            "I'm an ICU nurse and on a 12-hour shift I can drink coffee without noticing. My "
            "heart rate noticed. This counts milligrams per drink with one tap and goes red past "
            "400, which is the FDA number my doctor quoted."
        ),
        "scopes": ["diet.read", "diet.write"],
        "config": {
            "unit": "mg",
            "goal": 400,
            "goalMode": "atMost",
            "quick": [63, 95, 47, 80],
            "chartDays": 7,
            "groupBy": "",
            "fields": [
                number("amount", "Caffeine", "mg", 95, step=1),
                select(
                    "drink",
                    "Drink",
                    [
                        ["espresso", "Espresso"],
                        ["coffee", "Coffee"],
                        ["tea", "Tea"],
                        ["energy", "Energy drink"],
                    ],
                    extra=True,
                ),
            ],
        },
        "forks": [
            {
                "id": "pregnant",
                "gender": "f",
                "set": {"goal": 200},
                "requests": ["I'm pregnant — limit should be 200 mg"],
                "tag": "pregnancy 200 mg",
                "does": "uses the 200 mg pregnancy limit",
                "why": ["my OB said 200 mg while pregnant"],
            },
            {
                "id": "cutoff",
                "add_fields": [extra(clock("time", "Time", "08:00"))],
                "requests": [
                    "add the time of each coffee, I want to see if afternoon ones wreck my sleep"
                ],
                "tag": "with times",
                "does": "records what time each drink was",
                "why": ["I think my 3 p.m. cold brew is why I'm up at 1 a.m."],
            },
        ],
    }
)

# 21 ----------------------------------------------------------------------- protein
ROOTS.append(
    {
        "key": "protein-tracker",
        "title": "Protein Tracker",
        "short": "Protein tracker",
        "engine": "tally",
        "category": "diet",
        "popularity": 21,
        "gender": "m",
        "tags": ["protein", "nutrition", "strength"],
        "summary": "Grams of protein per day against a target, with quick-add buttons.",
        "bio": "dad of three, garage gym, 50 and stronger than at 30",
        "story": (
            "At 50 my trainer told me the one thing that matters is protein, and I was getting "
            "maybe half. I didn't want to log every meal, just protein. Three buttons — 20, 30, "
            "40 grams — cover almost everything I eat."
        ),
        "scopes": ["diet.read", "diet.write"],
        "config": {
            "unit": "g",
            "goal": 120,
            "goalMode": "atLeast",
            "quick": [20, 30, 40],
            "chartDays": 7,
            "groupBy": "",
            "fields": [number("amount", "Protein", "g", 30, step=5)],
        },
        "forks": [
            {
                "id": "veg",
                "add_fields": [
                    extra(
                        select(
                            "source",
                            "Source",
                            [
                                ["beans", "Beans & lentils"],
                                ["tofu", "Tofu & tempeh"],
                                ["dairy", "Dairy & eggs"],
                                ["shake", "Shake"],
                            ],
                        )
                    )
                ],
                "requests": [
                    "I'm vegetarian — add the protein source so I can see where it comes from"
                ],
                "tag": "vegetarian sources",
                "does": "records the protein source",
                "why": ["as a vegetarian I worried I was living on protein bars"],
            },
            {
                "id": "goal90",
                "gender": "f",
                "set": {"goal": 90},
                "requests": ["90 g is my target, I'm 5'3\" and not a bodybuilder"],
                "tag": "90 g goal",
                "does": "uses a 90 g goal",
                "why": ["120 g was my husband's number, not mine"],
            },
        ],
    }
)

# 22 ----------------------------------------------------------------------- steps
ROOTS.append(
    {
        "key": "step-counter",
        "title": "Daily Steps",
        "short": "Step log",
        "engine": "tally",
        "category": "fitness",
        "popularity": 20,
        "gender": None,
        "tags": ["steps", "walking", "daily-goal"],
        "summary": "Add steps from your watch or phone and see the week against 8,000 a day.",
        "bio": "remote worker fighting the couch, owns a standing desk",
        "story": (
            "Working from home I once took 900 steps in a day. My phone counts steps but never "
            "made me care; writing the number down in the evening does. 8,000 is my goal because "
            "10,000 felt like a marketing number."
        ),
        "scopes": ["fitness.read", "fitness.write"],
        "config": {
            "unit": "steps",
            "goal": 8000,
            "goalMode": "atLeast",
            "quick": [1000, 2500, 5000],
            "chartDays": 7,
            "groupBy": "",
            "fields": [number("amount", "Steps", "steps", 1000, step=100)],
        },
        "forks": [
            {
                "id": "10k",
                "set": {"goal": 10000},
                "requests": ["make it 10,000, our office is doing a step challenge"],
                "tag": "10k challenge",
                "does": "uses a 10,000-step goal",
                "why": ["our office step challenge is 10k a day and I'm competitive"],
            },
            {
                "id": "stroller",
                "gender": "f",
                "add_fields": [extra(check("stroller", "With the stroller"))],
                "requests": [
                    "add whether the walk was with the stroller, I want credit for pushing 25 lb"
                ],
                "tag": "stroller steps",
                "does": "marks stroller walks",
                "why": ["maternity leave walks with the stroller are my only exercise"],
            },
        ],
    }
)

# 23 ----------------------------------------------------------------------- sugar
ROOTS.append(
    {
        "key": "sugar-tracker",
        "title": "Added Sugar Tracker",
        "short": "Sugar tracker",
        "engine": "tally",
        "category": "diet",
        "popularity": 14,
        "gender": "f",
        "tags": ["sugar", "nutrition", "limits"],
        "summary": "Added sugar in grams against a 25 g daily limit.",
        "bio": "reformed soda drinker, mom of a type 1 diabetic kid",
        "story": (
            "Managing my son's type 1 made me read every label, and I realised my own 'healthy' "
            "granola had 14 grams of added sugar. This is just grams in, red bar at 25. Boring, "
            "and it works."
        ),
        "scopes": ["diet.read", "diet.write"],
        "config": {
            "unit": "g",
            "goal": 25,
            "goalMode": "atMost",
            "quick": [4, 10, 20],
            "chartDays": 7,
            "groupBy": "",
            "fields": [number("amount", "Added sugar", "g", 4, step=1)],
        },
        "forks": [
            {
                "id": "kids",
                "set": {"goal": 20},
                "requests": ["for my kids: 20 g a day max"],
                "tag": "kids' limit",
                "does": "uses a 20 g limit for kids",
                "why": ["my pediatrician said under 25 g for kids and I want margin"],
            },
        ],
    }
)

# 24 ----------------------------------------------------------------------- pantry
ROOTS.append(
    {
        "key": "pantry-freezer",
        "title": "Pantry & Freezer Inventory",
        "short": "Pantry inventory",
        "engine": "pantry",
        "category": "diet",
        "popularity": 19,
        "gender": "f",
        "tags": ["pantry", "food-waste", "groceries"],
        "summary": "What's in the pantry, fridge and freezer, sorted by what expires first.",
        "bio": "batch cook, chest-freezer owner, hates food waste",
        "story": (
            "I found a bag of chili in the chest freezer from 2021 and decided enough was enough. "
            "Everything that goes in gets a line and an expiry date, and the list is sorted by "
            "what needs eating first. We've thrown away maybe two things since."
        ),
        "scopes": ["diet.read", "home.read", "home.write"],
        "config": {
            "warnDays": 5,
            "fields": [
                text("name", "Item", maxlength=60),
                number("qty", "Quantity", "", 1),
                select(
                    "where",
                    "Where",
                    [["pantry", "Pantry"], ["fridge", "Fridge"], ["freezer", "Freezer"]],
                ),
                date("expires", "Use by"),
            ],
        },
        "forks": [
            {
                "id": "barcode",
                "features": {"foodfacts": {}},
                "requests": ["let me look up products by barcode so I don't type every name"],
                "tag": "barcode lookup",
                "does": "looks up product names by barcode",
                "why": ["typing 'organic low-sodium chicken broth' forty times got old"],
            },
            {
                "id": "warn10",
                "set": {"warnDays": 10},
                "requests": ["warn me 10 days ahead, I only shop every two weeks"],
                "tag": "10-day warning",
                "does": "warns ten days before expiry",
                "why": ["we live 40 minutes from a grocery store and shop every two weeks"],
            },
            {
                "id": "baby",
                "gender": "f",
                "append": {"fields.where.options": [["milk", "Breast milk stash"]]},
                "requests": ["add a breast milk stash location, frozen milk has strict dates"],
                "tag": "milk stash",
                "does": "tracks a frozen breast-milk stash",
                "why": ["my freezer is 60% frozen breast milk and dates matter"],
            },
        ],
    }
)

# 25 ----------------------------------------------------------------------- lunchbox
ROOTS.append(
    {
        "key": "lunchbox-planner",
        "title": "School Lunchbox Planner",
        "short": "Lunchbox planner",
        "engine": "mealplan",
        "category": "family",
        "popularity": 18,
        "gender": "f",
        "tags": ["lunchbox", "school", "kids"],
        "summary": "Plan a week of school lunches and snacks, with a shopping list for two kids.",
        "bio": "mom of two picky eaters, bento-box collector",
        "story": (
            "Packing two lunches at 7 a.m. with no plan meant crackers, again. On Sunday night I fill "
            "in mains and snacks for the week and the list goes to the grocery order. The kids each "
            "get a veto per week, which is the real secret."
        ),
        "scopes": ["diet.read", "family.read"],
        "config": {
            "days": WEEK[:5],
            "meals": [["main", "Main"], ["snack", "Snack"]],
            "servings": 2,
            "baseServings": 1,
            "avoid": [],
            "avoidLabel": "",
            "busyDays": [],
            "recipes": [
                recipe(
                    "Turkey & cheese pinwheels",
                    ["gluten", "dairy"],
                    ("tortilla", 1, ""),
                    ("turkey", 50, "g"),
                ),
                recipe("Pasta salad", ["gluten"], ("pasta", 80, "g"), ("cherry tomatoes", 6, "")),
                recipe(
                    "Hummus & veggie box",
                    ["vegetarian"],
                    ("hummus", 60, "g"),
                    ("carrot sticks", 1, "cup"),
                ),
                recipe(
                    "PB&J",
                    ["peanut", "gluten"],
                    ("bread", 2, "slice"),
                    ("peanut butter", 2, "tbsp"),
                ),
                recipe(
                    "Cheese quesadilla",
                    ["vegetarian", "dairy", "gluten"],
                    ("tortilla", 1, ""),
                    ("cheddar", 40, "g"),
                ),
                recipe("Apple slices", ["snack"], ("apple", 1, "")),
                recipe("Yogurt tube", ["snack", "dairy"], ("yogurt tube", 1, "")),
                recipe(
                    "Trail mix (nut-free)",
                    ["snack"],
                    ("pumpkin seeds", 20, "g"),
                    ("raisins", 20, "g"),
                ),
            ],
            "fields": [
                text("name", "Lunch idea", maxlength=60),
                area("ingredients", "Ingredients (one per line: item, qty, unit)"),
            ],
        },
        "forks": [
            {
                "id": "nutfree",
                "append": {"avoid": ["peanut", "nut"]},
                "set": {"avoidLabel": "nut-free school"},
                "requests": ["our school is nut-free — block anything with peanuts or nuts"],
                "tag": "(nut-free)",
                "does": "blocks peanuts and nuts for a nut-free school",
                "why": [
                    "our school is strictly nut-free and I got a note home about a granola bar"
                ],
            },
            {
                "id": "three",
                "set": {"servings": 3},
                "requests": ["three kids in school now, scale it for three"],
                "tag": "for three",
                "does": "scales the list for three kids",
                "why": ["our youngest started kindergarten, so it's three lunchboxes now"],
            },
        ],
    }
)

# 26 ----------------------------------------------------------------------- fasting
ROOTS.append(
    {
        "key": "fasting-window",
        "title": "Fasting Window Log",
        "short": "Fasting log",
        "engine": "span",
        "category": "diet",
        "popularity": 16,
        "gender": "m",
        "tags": ["fasting", "16-8", "nutrition"],
        "summary": "Last meal to first meal, in hours, against a 16-hour target.",
        "bio": "software engineer, 16:8 since 2022, breakfast skeptic",
        "story": (
            "I do 16:8 mostly because it stops me snacking at midnight while I code. The fasting "
            "apps all wanted a subscription for what is, mathematically, a subtraction. This one "
            "subtracts and draws a chart."
        ),
        "scopes": ["diet.read", "diet.write"],
        "config": {
            "goalHours": 16,
            "chartDays": 14,
            "fields": [
                date("date", "Date"),
                clock("start", "Last meal", "20:00"),
                clock("end", "First meal", "12:00"),
            ],
        },
        "forks": [
            {
                "id": "14",
                "gender": "f",
                "set": {
                    "goalHours": 14,
                    "fields.start.default": "19:00",
                    "fields.end.default": "09:00",
                },
                "requests": ["14 hours is enough for me as a woman over 40, 16 made me miserable"],
                "tag": "14:10",
                "does": "uses a gentler 14-hour window",
                "why": ["my doctor suggested 14 hours is plenty in perimenopause"],
            },
        ],
    }
)

# 27 ----------------------------------------------------------------------- meditation
ROOTS.append(
    {
        "key": "meditation-timer",
        "title": "Meditation Timer",
        "short": "Meditation timer",
        "engine": "timer",
        "category": "mood",
        "popularity": 17,
        "gender": None,
        "tags": ["meditation", "mindfulness", "calm"],
        "summary": "A quiet timer that remembers what kind of sit it was and keeps your streak.",
        "bio": "ER doctor, 10 minutes of breathing between chaos",
        "story": (
            "I work in an ER and ten minutes of breathing is what keeps me sane. The meditation "
            "apps kept upselling me courses mid-session. This is a stopwatch, four kinds of "
            "practice, and a streak."
        ),
        "scopes": ["mood.read", "mood.write"],
        "config": {
            "dailyGoal": 10,
            "chartDays": 7,
            "fields": [
                select(
                    "focus",
                    "Practice",
                    [
                        ["breath", "Breath"],
                        ["body", "Body scan"],
                        ["metta", "Loving-kindness"],
                        ["walk", "Walking"],
                    ],
                ),
                number("minutes", "Minutes (0 = use timer)", "", 0, hi=120),
                text("note", "Note", extra=True, maxlength=120),
            ],
        },
        "forks": [
            {
                "id": "kids",
                "unless": ["prayer"],
                "set": {"dailyGoal": 3},
                "append": {"fields.focus.options": [["belly", "Belly breathing (kids)"]]},
                "requests": [
                    "a kids' version — 3 minutes a day and belly breathing for my anxious 7-year-old"
                ],
                "tag": "for kids",
                "does": "adds a 3-minute kids' practice",
                "why": ["my seven-year-old has big worries at bedtime"],
            },
            {
                "id": "prayer",
                "unless": ["kids"],
                "set": {
                    "fields.focus.options": [
                        ["prayer", "Prayer"],
                        ["scripture", "Scripture"],
                        ["silence", "Silence"],
                    ]
                },
                "title": "Quiet Time Timer",
                "requests": ["use it for my morning prayer time — prayer, scripture, silence"],
                "tag": "quiet time",
                "does": "tracks morning prayer time",
                "why": ["my morning quiet time kept getting eaten by the school run"],
            },
        ],
    }
)

# 28 ----------------------------------------------------------------------- postpartum
ROOTS.append(
    {
        "key": "postpartum-checkin",
        "title": "Postpartum Check-in",
        "short": "Postpartum check-in",
        "engine": "mood",
        "category": "mood",
        "popularity": 20,
        "gender": "f",
        "tags": ["postpartum", "mood", "new-mom"],
        "summary": "A gentle daily check-in for the fourth trimester, to share with your midwife.",
        "bio": "mom of a 5-month-old, L&D nurse on leave",
        "story": (
            "I'm a labour and delivery nurse and I still didn't see my own postpartum anxiety "
            "coming. My midwife asked how the last two weeks had been and I genuinely couldn't "
            "remember. A 10-second check-in each day gave us real answers."
        ),
        "scopes": ["mood.read", "mood.write", "health.read"],
        "reminder": {"en": "Quick check-in: how are you, really? 💛"},
        "config": {
            "scale": [
                [1, "Struggling", "🌧️"],
                [2, "Tough", "🌥️"],
                [3, "Getting by", "⛅"],
                [4, "Good", "🌤️"],
                [5, "Really good", "☀️"],
            ],
            "tags": [
                ["tearful", "Tearful"],
                ["anxious", "Anxious"],
                ["rested", "Got some sleep"],
                ["supported", "Felt supported"],
                ["lonely", "Lonely"],
                ["feeding", "Feeding went well"],
                ["outside", "Got outside"],
            ],
            "prompts": [
                "What's one thing that helped today?",
                "Did you eat a real meal today?",
                "Who could you ask for help tomorrow?",
            ],
            "chartDays": 14,
            "fields": [area("note", "Anything to tell your midwife?", maxlength=500)],
        },
        "forks": [
            {
                "id": "partner",
                "gender": "f",
                "set": {
                    "tags": [
                        ["tired", "Exhausted"],
                        ["anxious", "Anxious"],
                        ["helped", "Helped with nights"],
                        ["connected", "Connected with baby"],
                        ["work", "Back at work"],
                    ]
                },
                "title": "New Dad Check-in",
                "requests": ["make a version for dads — postpartum hits partners too"],
                "tag": "for partners",
                "tags": ["dads"],
                "does": "adapts the check-in for partners",
                "why": [
                    "my husband's depression after our second was the thing nobody asked about"
                ],
            },
            {
                "id": "epds",
                "add_fields": [extra(scale("sleepq", "Sleep (0–3)", 0, 3, 1))],
                "requests": ["add a sleep question so I can bring it to my 6-week appointment"],
                "tag": "sleep question",
                "does": "adds a sleep score for appointments",
                "why": ["my OB asked about sleep and I had no answer"],
            },
        ],
    }
)

# 29 ----------------------------------------------------------------------- migraine
ROOTS.append(
    {
        "key": "migraine-diary",
        "title": "Migraine Diary",
        "short": "Migraine diary",
        "engine": "mood",
        "category": "mood",
        "popularity": 15,
        "gender": "f",
        "tags": ["migraine", "triggers", "health"],
        "summary": "Log headaches with severity and suspected triggers for your neurologist.",
        "bio": "graphic designer, migraines since 14, neurologist's favourite patient",
        "story": (
            "My neurologist wanted a headache diary with triggers and I kept reconstructing it from "
            "memory in the waiting room. Now it's severity plus a few trigger tags. Turns out it's "
            "sleep and skipped lunch, not chocolate — 20 years of avoiding chocolate for nothing."
        ),
        "scopes": ["health.read", "health.write"],
        "config": {
            "scale": [
                [1, "Mild", "🙂"],
                [2, "Annoying", "😐"],
                [3, "Moderate", "😣"],
                [4, "Bad", "😖"],
                [5, "Severe", "🤕"],
            ],
            "tags": [
                ["sleep", "Poor sleep"],
                ["meal", "Skipped meal"],
                ["screens", "Screens"],
                ["weather", "Weather change"],
                ["period", "Period"],
                ["stress", "Stress"],
                ["wine", "Red wine"],
            ],
            "prompts": [],
            "chartDays": 30,
            "fields": [area("note", "Medication / notes", maxlength=300)],
        },
        "forks": [
            {
                "id": "meds",
                "add_fields": [extra(text("med", "Medication taken", maxlength=40))],
                "scopes": ["health.medications.read"],
                "requests": [
                    "add which medication I took — my neurologist needs to know how often I use triptans"
                ],
                "tag": "medication log",
                "does": "records medication taken",
                "why": [
                    "overusing triptans causes rebound headaches, so my neurologist counts them"
                ],
            },
            {
                "id": "weather",
                "features": {
                    "weather": {
                        "city": "Denver",
                        "lat": 39.74,
                        "lon": -104.99,
                        "tempUnit": "fahrenheit",
                    }
                },
                "scopes": ["location.read"],
                "requests": [
                    "show today's weather, I swear pressure changes in Denver set them off"
                ],
                "tag": "weather-aware",
                "does": "shows the day's weather next to the diary",
                "why": ["every chinook wind in Denver gives me a migraine"],
            },
        ],
    }
)

# 30 ----------------------------------------------------------------------- baby sleep
ROOTS.append(
    {
        "key": "baby-sleep",
        "title": "Baby Nap & Night Log",
        "short": "Baby sleep log",
        "engine": "span",
        "category": "sleep",
        "popularity": 22,
        "gender": "f",
        "tags": ["baby", "naps", "sleep"],
        "summary": "Naps and nights in one place, with total sleep per day for your little one.",
        "bio": "first-time mom, nap-schedule nerd, coffee on an IV",
        "story": (
            "Our sleep consultant asked for a week of naps and nights and I had screenshots of a "
            "baby monitor. This adds up every nap and the night for a daily total, so I can see "
            "whether she's short before the 5 p.m. meltdown hits."
        ),
        "scopes": ["sleep.read", "sleep.write", "family.read"],
        "config": {
            "goalHours": 14,
            "chartDays": 14,
            "fields": [
                date("date", "Date"),
                select("kind", "Type", [["nap", "Nap"], ["night", "Night"]]),
                clock("start", "Fell asleep", "13:00"),
                clock("end", "Woke up", "14:30"),
            ],
        },
        "forks": [
            {
                "id": "toddler",
                "set": {"goalHours": 12},
                "requests": ["she's 2 now — goal should be 12 hours and usually one nap"],
                "tag": "toddler",
                "does": "uses a toddler-sized 12-hour goal",
                "why": ["our daughter dropped to one nap at 18 months"],
            },
            {
                "id": "where",
                "add_fields": [
                    extra(
                        select(
                            "where",
                            "Where",
                            [
                                ["crib", "Crib"],
                                ["stroller", "Stroller"],
                                ["car", "Car"],
                                ["arms", "In arms"],
                            ],
                        )
                    )
                ],
                "requests": [
                    "add where the nap happened, contact naps count but I want to see them"
                ],
                "tag": "nap location",
                "does": "records where each nap happened",
                "why": [
                    "half of our daughter's naps happen in the car and I want to know how many"
                ],
            },
        ],
    }
)

# 31 ----------------------------------------------------------------------- savings
ROOTS.append(
    {
        "key": "savings-goals",
        "title": "Savings Goals",
        "short": "Savings goals",
        "engine": "savings",
        "category": "finance",
        "popularity": 23,
        "gender": None,
        "tags": ["savings", "goals", "money"],
        "summary": "Goals with targets, deposits and a projected date you'll get there.",
        "bio": "first-gen college grad, paying off loans and saving anyway",
        "story": (
            "I'm paying off student loans and still trying to build an emergency fund. Seeing the "
            "projected date move closer every time I add $50 is weirdly more motivating than the "
            "balance itself."
        ),
        "scopes": ["finance.read", "finance.write"],
        "config": {
            "currency": "USD",
            "step": 50,
            "starter": [["Emergency fund", 5000], ["Family trip", 2500]],
            "fields": [
                text("name", "Goal", maxlength=40),
                number("target", "Target", "", 1000, step=50),
            ],
        },
        "forks": [
            {
                "id": "college",
                "set": {
                    "starter": [
                        ["College fund — oldest", 20000],
                        ["College fund — youngest", 20000],
                    ]
                },
                "requests": ["set it up for our kids' college funds"],
                "tag": "college funds",
                "does": "starts with college funds for two kids",
                "why": ["we opened RESPs for both kids and I want to see progress"],
            },
            {
                "id": "cad",
                "when": {"currency": "USD"},
                "set": {"currency": "CAD", "locale": "en-CA"},
                "requests": ["Canadian dollars please"],
                "tag": "CAD",
                "does": "uses Canadian dollars",
                "why": ["we live in Calgary and think in Canadian dollars"],
            },
        ],
    }
)

# 32 ----------------------------------------------------------------------- allowance
ROOTS.append(
    {
        "key": "allowance-jars",
        "title": "Kids' Allowance Jars",
        "short": "Allowance jars",
        "engine": "savings",
        "category": "finance",
        "popularity": 21,
        "gender": "m",
        "tags": ["allowance", "kids", "money"],
        "summary": "Spend, Save and Give jars; one tap splits the weekly allowance 50/40/10.",
        "bio": "dad of two, financial planner, believes in the three-jar system",
        "story": (
            "I'm a financial planner and I wanted my kids to learn the three-jar system before "
            "they learn credit cards. Every Saturday one tap splits their $10: half to spend, 40% "
            "to save, 10% to give. My daughter has already 'given' to the animal shelter twice."
        ),
        "scopes": ["finance.read", "finance.write", "family.read"],
        "config": {
            "currency": "USD",
            "step": 1,
            "starter": [["Spend", 20], ["Save", 100], ["Give", 20]],
            "allowance": {"amount": 10, "split": [["Spend", 50], ["Save", 40], ["Give", 10]]},
            "fields": [
                text("name", "Jar", maxlength=30),
                number("target", "Target", "", 20, step=1),
            ],
        },
        "forks": [
            {
                "id": "teen",
                "set": {
                    "allowance.amount": 25,
                    "allowance.split": [["Spend", 40], ["Save", 50], ["Give", 10]],
                },
                "requests": ["my son is 13 — $25 a week, and save half of it"],
                "tag": "teen allowance",
                "does": "pays $25 a week and saves half",
                "why": ["at 13 he wants a gaming PC, so saving half teaches patience"],
            },
            {
                "id": "invest",
                "append": {"starter": [["Invest", 200]], "allowance.split": [["Invest", 10]]},
                "set": {"allowance.split": [["Spend", 40], ["Save", 40], ["Give", 10]]},
                "requests": ["add an Invest jar that gets 10%"],
                "tag": "invest jar",
                "does": "adds a fourth jar for investing",
                "why": ["my daughter asked what a stock is, so now she has one"],
            },
        ],
    }
)

# 33 ----------------------------------------------------------------------- trip split
ROOTS.append(
    {
        "key": "trip-split",
        "title": "Trip Expense Splitter",
        "short": "Trip splitter",
        "engine": "split",
        "category": "travel",
        "popularity": 27,
        "gender": None,
        "tags": ["travel", "expenses", "split"],
        "summary": "Who paid what on a group trip, and the fewest transfers to settle up.",
        "bio": "organises the friends' cabin trip every year, keeper of receipts",
        "story": (
            "Every year I organise the cabin trip with three other families and every year the "
            "spreadsheet ends in an argument. This lists who paid, splits it evenly, and tells us "
            "the fewest transfers to settle. Nobody argues with the app."
        ),
        "scopes": ["travel.read", "travel.write", "finance.read"],
        "config": {
            "currency": "USD",
            "people": ["Me", "Jordan", "Priya", "Sam"],
            "fields": [
                text("what", "What", maxlength=60),
                number("amount", "Amount", "", None, step=0.01),
                select("payer", "Paid by", []),
            ],
        },
        "forks": [
            {
                "id": "europe",
                "unless": ["roommates"],
                "features": {"rates": {"from": "EUR", "to": "USD"}},
                "requests": ["we're going to Portugal — show the euro exchange rate"],
                "tag": "euro trip",
                "does": "shows the live EUR→USD rate",
                "why": ["our Lisbon trip had everyone doing euro math in their heads"],
            },
            {
                "id": "japan",
                "unless": ["roommates"],
                "features": {"rates": {"from": "JPY", "to": "CAD"}},
                "set": {"currency": "CAD", "locale": "en-CA"},
                "requests": ["family trip to Japan from Vancouver — CAD, and show the yen rate"],
                "ja": [
                    "バンクーバーから日本への家族旅行です。カナダドル表示で、円のレートも見たいです"
                ],
                "tag": "Japan trip",
                "does": "works in CAD and shows the yen rate",
                "why": ["we're taking the kids to Osaka to meet their great-grandmother"],
            },
            {
                "id": "roommates",
                "unless": ["europe", "japan"],
                "set": {"people": ["Me", "Roomie 1", "Roomie 2"]},
                "title": "Roommate Bills Splitter",
                "requests": ["use it for rent and bills with my two roommates"],
                "tag": "roommates",
                "does": "splits household bills between roommates",
                "why": [
                    "there are three of us sharing one apartment and one Venmo, and it was endless confusion"
                ],
            },
        ],
    }
)

# 34 ----------------------------------------------------------------------- subscriptions
ROOTS.append(
    {
        "key": "subscription-tracker",
        "title": "Subscription Tracker",
        "short": "Subscription tracker",
        "engine": "interval",
        "category": "finance",
        "popularity": 17,
        "gender": None,
        "tags": ["subscriptions", "bills", "money"],
        "summary": "Every recurring charge, when it renews next, and what it all costs per month.",
        "bio": "cancelled 6 subscriptions in one afternoon, felt amazing",
        "story": (
            "I added up our streaming, apps and memberships one afternoon and nearly fell over. "
            "Now every renewal has a line, a next date and a monthly cost. We cancelled six things "
            "and nobody noticed."
        ),
        "scopes": ["finance.read"],
        "config": {
            "currency": "USD",
            "tasks": [
                ["stream", "Streaming", 30, 15.49],
                ["music", "Music", 30, 10.99],
                ["cloud", "Cloud storage", 30, 2.99],
                ["gym", "Gym", 30, 45],
                ["car", "Car insurance", 182, 640],
            ],
            "fields": [
                text("label", "Subscription", maxlength=40),
                number("every", "Every (days)", "", 30),
                number("cost", "Cost", "", None, step=0.01),
            ],
        },
        "forks": [
            {
                "id": "kids",
                "append": {
                    "tasks": [["swim", "Swim lessons", 30, 85], ["piano", "Piano lessons", 30, 160]]
                },
                "requests": [
                    "add the kids' activities — swim and piano lessons are subscriptions too"
                ],
                "tag": "kids' activities",
                "does": "includes kids' recurring activities",
                "why": ["the kids' activities cost more than all our streaming combined"],
            },
        ],
    }
)

# 35 ----------------------------------------------------------------------- grocery spend
ROOTS.append(
    {
        "key": "grocery-spend",
        "title": "Grocery Spend Tracker",
        "short": "Grocery spend tracker",
        "engine": "budget",
        "category": "finance",
        "popularity": 16,
        "gender": "f",
        "tags": ["groceries", "budget", "food"],
        "summary": "Grocery receipts by store with a monthly cap per store.",
        "bio": "mom of four, Costco strategist, coupon-curious",
        "story": (
            "Feeding four kids, groceries are our second-biggest expense. I wanted to see Costco "
            "versus the corner store versus the farmers market, not 'food'. The Costco bar hits "
            "its limit by the 15th every month, and now I know."
        ),
        "scopes": ["finance.read", "finance.write", "diet.read"],
        "config": {
            "currency": "USD",
            "limits": {"costco": 500, "supermarket": 400, "market": 120},
            "chartDays": 30,
            "fields": [
                select("kind", "Type", [["expense", "Expense"], ["income", "Refund"]]),
                number("amount", "Amount", "", None, step=0.01),
                select(
                    "category",
                    "Store",
                    [
                        ["costco", "Costco"],
                        ["supermarket", "Supermarket"],
                        ["market", "Farmers market"],
                        ["corner", "Corner store"],
                        ["online", "Online delivery"],
                    ],
                ),
                text("note", "Note", maxlength=80),
                date("date", "Date"),
            ],
        },
        "forks": [
            {
                "id": "cad",
                "when": {"currency": "USD"},
                "set": {
                    "currency": "CAD",
                    "locale": "en-CA",
                    "fields.category.options": [
                        ["costco", "Costco"],
                        ["nofrills", "No Frills"],
                        ["loblaws", "Loblaws"],
                        ["market", "Farmers market"],
                    ],
                },
                "requests": [
                    "we're in Ontario — CAD and swap the stores for No Frills and Loblaws"
                ],
                "tag": "Ontario stores",
                "does": "uses CAD and Ontario grocery stores",
                "why": ["we moved to Ottawa and none of my old stores exist here"],
            },
        ],
    }
)

# 36 ----------------------------------------------------------------------- vocab
ROOTS.append(
    {
        "key": "vocab-flashcards",
        "title": "Spanish Vocab Flashcards",
        "short": "Vocab flashcards",
        "engine": "flashcards",
        "category": "study",
        "popularity": 26,
        "gender": None,
        "tags": ["spanish", "language", "flashcards"],
        "summary": "Spaced-repetition flashcards with a starter deck of travel Spanish.",
        "bio": "learning Spanish to talk with my in-laws, 400-day streak",
        "story": (
            "My in-laws in Puebla are wonderful and speak no English. Big language apps taught me "
            "'the bear drinks milk'; I needed 'can I help with the dishes'. These are my cards, "
            "with boxes that space out the ones I know."
        ),
        "scopes": ["study.read", "study.write"],
        "config": {
            "reverse": False,
            "intervals": [0, 1, 3, 7, 14, 30],
            "cards": [
                ["¿Te ayudo con los platos?", "Can I help with the dishes?"],
                ["Está riquísimo", "It's delicious"],
                ["¿Dónde está el baño?", "Where is the bathroom?"],
                ["Mi suegra", "My mother-in-law"],
                ["Tengo hambre", "I'm hungry"],
                ["¿Cuánto cuesta?", "How much is it?"],
                ["Buen provecho", "Enjoy your meal"],
                ["Nos vemos mañana", "See you tomorrow"],
            ],
            "fields": [text("front", "Front", maxlength=80), text("back", "Back", maxlength=80)],
        },
        "forks": [
            {
                "id": "french",
                "unless": ["reverse"],
                "set": {
                    "cards": [
                        ["Bonjour, ça va ?", "Hi, how are you?"],
                        ["Je voudrais un café", "I'd like a coffee"],
                        ["Où est la gare ?", "Where is the station?"],
                        ["L'addition, s'il vous plaît", "The bill, please"],
                        ["Je ne comprends pas", "I don't understand"],
                    ]
                },
                "title": "Quebec French Flashcards",
                "requests": ["we're moving to Montreal — swap the deck for French basics"],
                "tag": "French",
                "tags": ["french"],
                "does": "uses a French starter deck",
                "why": ["we're moving to Montreal and my French stops at 'bonjour'"],
            },
            {
                "id": "reverse",
                "unless": ["french"],
                "set": {"reverse": True},
                "requests": ["quiz me English → Spanish instead, I can read it but can't say it"],
                "tag": "English → Spanish",
                "does": "quizzes from English to Spanish",
                "why": ["I understand my in-laws fine, it's speaking back that fails"],
                "changelog": "Cards now quiz English → Spanish.",
            },
            {
                "id": "intervals",
                "set": {"intervals": [0, 1, 2, 4, 7]},
                "requests": ["shorter intervals, I have an exam in three weeks"],
                "tag": "cram mode",
                "does": "uses shorter review intervals",
                "why": ["my DELE exam is in three weeks"],
            },
        ],
    }
)

# 37 ----------------------------------------------------------------------- kanji (zh root)
ROOTS.append(
    {
        "key": "hanzi-cards",
        "title": "孩子的汉字卡",
        "short": "汉字卡片",
        "engine": "flashcards",
        "category": "study",
        "popularity": 14,
        "gender": "f",
        "locale": "zh-CN",
        "lang": "zh",
        "tags": ["chinese", "kids", "flashcards"],
        "summary": "给海外长大的孩子用的汉字卡片，间隔复习，一天几分钟。",
        "bio": "温哥华的妈妈，两个孩子，周末中文学校家长",
        "story": (
            "我们住在温哥华，两个孩子在家说中文，但认字越来越少。周末中文学校的作业总是拖到周日晚上。"
            "我让助手做了这个汉字卡，每天睡前五分钟，认识的卡会隔几天再出现。现在老大已经能自己读绘本了。"
        ),
        "scopes": ["study.read", "study.write", "family.read"],
        "config": {
            "reverse": False,
            "intervals": [0, 1, 3, 7, 14],
            "cards": [
                ["山", "shān · 大山"],
                ["水", "shuǐ · 喝水"],
                ["火", "huǒ · 火车"],
                ["月", "yuè · 月亮"],
                ["妈", "mā · 妈妈"],
                ["学", "xué · 学校"],
                ["家", "jiā · 回家"],
                ["朋", "péng · 朋友"],
            ],
            "fields": [
                text("front", "汉字", maxlength=10),
                text("back", "拼音 · 词语", maxlength=40),
            ],
        },
        "forks": [
            {
                "id": "grade2",
                "unless": ["cantonese"],
                "append": {
                    "cards": [["春", "chūn · 春天"], ["雪", "xuě · 下雪"], ["桥", "qiáo · 大桥"]]
                },
                "requests": ["add the grade 2 characters from the weekend school book"],
                "zh": ["加上中文学校二年级课本里的生字", "请把二年级第一单元的生字加进去"],
                "tag": "二年级",
                "does": "adds grade-two characters",
                "why": ["老二升二年级了，生字一下子多了很多"],
            },
            {
                "id": "cantonese",
                "unless": ["grade2"],
                "set": {
                    "cards": [
                        ["山", "saan1 · 山"],
                        ["水", "seoi2 · 水"],
                        ["食", "sik6 · 食飯"],
                        ["屋", "uk1 · 屋企"],
                        ["媽", "maa1 · 媽媽"],
                    ]
                },
                "title": "粤语字卡",
                "requests": ["make a Cantonese version with jyutping for my parents' side"],
                "zh": ["做一个粤语版，用粤拼，孩子的外公外婆讲广东话"],
                "tag": "粤语版",
                "does": "switches to Cantonese with jyutping",
                "why": ["孩子的外公外婆只讲广东话"],
            },
        ],
    }
)

# 38 ----------------------------------------------------------------------- pomodoro
ROOTS.append(
    {
        "key": "homework-pomodoro",
        "title": "Homework Pomodoro",
        "short": "Homework timer",
        "engine": "pomodoro",
        "category": "study",
        "popularity": 19,
        "gender": None,
        "tags": ["pomodoro", "homework", "focus"],
        "summary": "25-minute focus blocks with breaks, counted per homework task.",
        "bio": "high-school junior, AP everything, sleeps on weekends",
        "story": (
            "I'm a junior taking four APs and I used to 'study' for three hours with my phone. "
            "Pomodoros fixed it: 25 minutes on, 5 off, and every block counts toward the task I "
            "picked. Four tomatoes a night is my deal with myself."
        ),
        "scopes": ["study.read", "study.write"],
        "config": {
            "workMinutes": 25,
            "breakMinutes": 5,
            "longBreakMinutes": 15,
            "longEvery": 4,
            "dailyGoal": 4,
            "chartDays": 7,
            "fields": [text("title", "Task", maxlength=60)],
        },
        "forks": [
            {
                "id": "kid",
                "set": {"workMinutes": 15, "breakMinutes": 5, "dailyGoal": 2},
                "requests": ["15-minute blocks for my 8-year-old with ADHD, two a night is plenty"],
                "tag": "15-min kid blocks",
                "does": "uses 15-minute blocks for younger kids",
                "why": ["25 minutes is an eternity to my eight-year-old"],
            },
            {
                "id": "deep",
                "set": {"workMinutes": 50, "breakMinutes": 10, "dailyGoal": 4},
                "requests": ["50/10 blocks, I'm writing my thesis"],
                "tag": "50/10",
                "does": "uses 50-minute deep-work blocks",
                "why": ["my thesis needs longer stretches than 25 minutes"],
            },
        ],
    }
)

# 39 ----------------------------------------------------------------------- birthdays
ROOTS.append(
    {
        "key": "family-birthdays",
        "title": "Birthdays & Anniversaries",
        "short": "Birthday tracker",
        "engine": "events",
        "category": "family",
        "popularity": 24,
        "gender": "f",
        "tags": ["birthdays", "family", "reminders"],
        "summary": "Every family birthday and anniversary, next date, days to go and how old they turn.",
        "bio": "keeper of the family calendar, 11 nieces and nephews",
        "story": (
            "I have eleven nieces and nephews and I'm the aunt who remembers birthdays — except "
            "when I don't. Everything yearly goes in once, and the list shows what's coming and "
            "how old everyone turns. I order cards two weeks ahead now."
        ),
        "scopes": ["family.read", "calendar.read"],
        "reminder": {"en": "A birthday is coming up — card sent? 🎂"},
        "config": {
            "soonDays": 14,
            "showWeeks": False,
            "fields": [
                text("title", "Who / what", maxlength=60),
                date("date", "Date"),
                select(
                    "kind",
                    "Kind",
                    [
                        ["birthday", "🎂 Birthday"],
                        ["anniv", "💍 Anniversary"],
                        ["appt", "🩺 Appointment"],
                        ["school", "🏫 School"],
                    ],
                ),
                check("yearly", "Every year", default=True),
            ],
        },
        "forks": [
            {
                "id": "contacts",
                "scopes": ["contacts.read"],
                "set": {"soonDays": 21},
                "requests": ["pull birthdays from my contacts and warn me three weeks ahead"],
                "tag": "from contacts",
                "does": "warns three weeks ahead and can read contacts",
                "why": ["mailing cards to Manila takes three weeks"],
            },
            {
                "id": "holidays",
                "features": {"holidays": {"country": "CA", "show": 5}},
                "requests": ["show Canadian public holidays too, for planning visits"],
                "tag": "+ holidays",
                "does": "lists upcoming Canadian public holidays",
                "why": ["family visits always happen on long weekends"],
            },
        ],
    }
)

# 40 ----------------------------------------------------------------------- hospital bag
ROOTS.append(
    {
        "key": "hospital-bag",
        "title": "Hospital Bag Checklist",
        "short": "Hospital bag checklist",
        "engine": "checklist",
        "category": "family",
        "popularity": 25,
        "gender": "f",
        "tags": ["pregnancy", "baby", "checklist"],
        "summary": "What to pack for birth, for you, baby and partner, counted back from your due date.",
        "bio": "doula, mom of three, has packed a hospital bag 40+ times",
        "story": (
            "As a doula I've seen people show up with three outfits and no phone charger. This is "
            "my client checklist with dates counted back from the due date, so the bag is packed "
            "at 36 weeks, not in the car."
        ),
        "scopes": ["family.read", "health.read"],
        "config": {
            "targetLabel": "Due date",
            "sections": [
                {
                    "title": "For you",
                    "items": [
                        ["Long phone charger", -28],
                        ["Robe & slippers", -28],
                        ["Nursing bras", -28],
                        ["Snacks", -21],
                    ],
                },
                {
                    "title": "For baby",
                    "items": [
                        ["Car seat installed", -35],
                        ["Going-home outfit", -28],
                        ["Swaddle", -28],
                    ],
                },
                {
                    "title": "Paperwork",
                    "items": [["Birth plan copies", -28], ["Insurance card", -28]],
                },
            ],
            "fields": [
                text("text", "Item", maxlength=80),
                select("section", "Section", []),
                number("offset", "Days from due date", "", -28, lo=-120, hi=30),
            ],
        },
        "forks": [
            {
                "id": "csection",
                "gender": "f",
                "append": {
                    "sections": [
                        {
                            "title": "C-section",
                            "items": [
                                ["High-waisted underwear", -28],
                                ["Belly binder", -28],
                                ["Stool softener", -21],
                            ],
                        }
                    ]
                },
                "requests": ["planned C-section — add what I need for recovery"],
                "tag": "C-section",
                "does": "adds C-section recovery items",
                "why": ["my second is breech and we scheduled a C-section"],
            },
            {
                "id": "nicu",
                "append": {
                    "sections": [
                        {
                            "title": "NICU",
                            "items": [
                                ["Pump parts", -21],
                                ["Preemie outfits", -21],
                                ["Parking pass info", -14],
                            ],
                        }
                    ]
                },
                "requests": ["add a NICU section, our baby will likely need it"],
                "tag": "NICU-ready",
                "does": "adds NICU preparation",
                "why": ["our baby has a heart condition and will go straight to the NICU"],
            },
        ],
    }
)

# 41 ----------------------------------------------------------------------- baby growth
ROOTS.append(
    {
        "key": "baby-growth",
        "title": "Baby Growth Tracker",
        "short": "Growth tracker",
        "engine": "measure",
        "category": "family",
        "popularity": 16,
        "gender": "f",
        "tags": ["baby", "growth", "pediatrician"],
        "summary": "Weight and length from each checkup, with a trend line.",
        "bio": "mom of a preemie, pediatric-nurse sister on speed dial",
        "story": (
            "Our daughter was born at 34 weeks and every ounce mattered. The pediatrician's portal "
            "shows a number per visit; I wanted the line. Weight and length go in after every "
            "weigh-in, and the trend is what I show the grandparents."
        ),
        "scopes": ["family.read", "health.read"],
        "config": {
            "unit": "kg",
            "goal": 0,
            "smoothing": 1,
            "second": True,
            "chartSecond": False,
            "chartDays": 90,
            "fields": [
                date("date", "Date"),
                number("value", "Weight", "kg", None, step=0.01),
                number("value2", "Length", "cm", None, step=0.1),
            ],
        },
        "forks": [
            {
                "id": "lb",
                "when": {"unit": "kg"},
                "set": {"unit": "lb", "fields.value.unit": "lb", "fields.value2.unit": "in"},
                "requests": ["pounds and inches please, that's what our pediatrician uses"],
                "tag": "lb & in",
                "does": "uses pounds and inches",
                "why": ["our pediatrician in Texas talks in pounds and ounces"],
            },
            {
                "id": "head",
                "add_fields": [extra(number("head", "Head circumference", "cm", None, step=0.1))],
                "requests": ["add head circumference, they measure it every visit"],
                "tag": "head size",
                "does": "adds head circumference",
                "why": ["the nurse measures head size every visit and I forget to write it down"],
            },
        ],
    }
)

# 42 ----------------------------------------------------------------------- weight
ROOTS.append(
    {
        "key": "weight-trend",
        "title": "Weight Trend",
        "short": "Weight trend",
        "engine": "measure",
        "category": "fitness",
        "popularity": 18,
        "gender": "m",
        "tags": ["weight", "trend", "health"],
        "summary": "Daily weigh-ins smoothed into a 7-day trend, so one salty dinner doesn't matter.",
        "bio": "dad of two, lost 40 lb slowly, trend-line believer",
        "story": (
            "Daily weigh-ins used to ruin my mood — up two pounds after pizza night. A 7-day moving "
            "average changed everything: I look at the line, not the number. Forty pounds over a "
            "year and a half, one boring data point at a time."
        ),
        "scopes": ["fitness.read", "health.read"],
        "config": {
            "unit": "kg",
            "goal": 0,
            "smoothing": 7,
            "second": False,
            "chartSecond": False,
            "chartDays": 60,
            "fields": [date("date", "Date"), number("value", "Weight", "kg", None, step=0.1)],
        },
        "forks": [
            {
                "id": "lb",
                "when": {"unit": "kg"},
                "set": {"unit": "lb", "fields.value.unit": "lb"},
                "requests": ["pounds please"],
                "tag": "lb",
                "does": "uses pounds",
                "why": ["my bathroom scale only does pounds"],
            },
            {
                "id": "bp",
                "set": {
                    "second": True,
                    "chartSecond": True,
                    "unit": "mmHg",
                    "smoothing": 3,
                    "fields.value.label": "Systolic",
                    "fields.value.unit": "mmHg",
                },
                "add_fields": [number("value2", "Diastolic", "mmHg", None)],
                "scopes": ["health.write"],
                "title": "Blood Pressure Log",
                "requests": [
                    "turn it into a blood pressure log — systolic and diastolic, my doctor wants two weeks of readings"
                ],
                "tag": "blood pressure",
                "tags": ["blood-pressure"],
                "does": "tracks blood pressure readings",
                "why": ["my doctor wants two weeks of home readings before adjusting my meds"],
            },
        ],
    }
)

# 43 ----------------------------------------------------------------------- home maintenance
ROOTS.append(
    {
        "key": "home-maintenance",
        "title": "Home Maintenance Schedule",
        "short": "Home maintenance schedule",
        "engine": "interval",
        "category": "family",
        "popularity": 15,
        "gender": "m",
        "tags": ["home", "maintenance", "recurring"],
        "summary": "Furnace filters, smoke alarms and gutters: what's due, what's overdue.",
        "bio": "first-time homeowner, dad, learning plumbing from videos",
        "story": (
            "First house, first furnace, first time learning that filters need changing. Our home "
            "inspector rattled off a list and I wrote it down here with how often each thing needs "
            "doing. It tells me what's overdue, which is usually the gutters."
        ),
        "scopes": ["home.read", "home.write"],
        "config": {
            "currency": "USD",
            "tasks": [
                ["filter", "Furnace filter", 90, 0],
                ["smoke", "Test smoke alarms", 180, 0],
                ["gutters", "Clean gutters", 180, 0],
                ["salt", "Water softener salt", 30, 0],
                ["dryer", "Clean dryer vent", 365, 0],
            ],
            "fields": [
                text("label", "Task", maxlength=40),
                number("every", "Every (days)", "", 30),
            ],
        },
        "forks": [
            {
                "id": "winter",
                "append": {
                    "tasks": [
                        ["pipes", "Insulate outdoor taps", 365, 0],
                        ["snow", "Service snowblower", 365, 0],
                    ]
                },
                "requests": [
                    "we're in Winnipeg — add winter stuff like outdoor taps and the snowblower"
                ],
                "tag": "prairie winter",
                "does": "adds winterizing tasks",
                "why": ["our first Winnipeg winter froze a pipe"],
            },
            {
                "id": "pool",
                "append": {"tasks": [["chlorine", "Check pool chlorine", 3, 0]]},
                "requests": ["add pool chlorine every 3 days"],
                "tag": "pool",
                "does": "adds pool care",
                "why": ["we bought a house with a pool in Tampa"],
            },
        ],
    }
)

# 44 ----------------------------------------------------------------------- medicine
ROOTS.append(
    {
        "key": "family-medicine",
        "title": "Family Medicine Schedule",
        "short": "Medicine schedule",
        "engine": "doses",
        "category": "family",
        "popularity": 22,
        "gender": "f",
        "tags": ["medication", "vitamins", "family"],
        "summary": "Everyone's medicines and vitamins for today; tick doses, late ones turn red.",
        "bio": "pharmacist, mom of three, label reader",
        "story": (
            "I'm a pharmacist and even I lost track when all three kids had strep the same week. "
            "This shows today's doses by time, who they're for, and goes red when one is late. "
            "Ticking 'taken' means my husband and I stop double-dosing the toddler."
        ),
        "scopes": ["health.medications.read", "health.medications.write", "family.read"],
        "reminder": {"en": "Check the medicine schedule 💊"},
        "config": {
            "graceMinutes": 60,
            "chartDays": 7,
            "meds": [
                {"id": "vitd", "name": "Vitamin D drops", "who": "Baby", "times": ["08:00"]},
                {"id": "iron", "name": "Iron", "who": "Me", "times": ["08:00"]},
                {
                    "id": "allergy",
                    "name": "Allergy syrup",
                    "who": "Oldest",
                    "times": ["07:30", "19:30"],
                },
            ],
            "fields": [
                text("name", "Medicine", maxlength=40),
                text("who", "For", maxlength=30),
                text("times", "Times (e.g. 08:00, 20:00)", maxlength=40),
            ],
        },
        "forks": [
            {
                "id": "inhaler",
                "append": {
                    "meds": [
                        {
                            "id": "inhaler",
                            "name": "Controller inhaler",
                            "who": "Middle",
                            "times": ["07:00", "19:00"],
                        }
                    ]
                },
                "requests": ["add my son's inhaler twice a day"],
                "tag": "asthma",
                "does": "adds a twice-daily inhaler",
                "why": ["my middle son was diagnosed with asthma in the fall"],
            },
            {
                "id": "grace",
                "set": {"graceMinutes": 30},
                "requests": ["mark doses late after 30 minutes, not an hour"],
                "tag": "30-min grace",
                "does": "flags late doses after 30 minutes",
                "why": ["my dad's heart meds need tighter timing"],
                "changelog": "Late after 30 minutes instead of an hour.",
            },
            {
                "id": "parents",
                "set": {
                    "meds": [
                        {
                            "id": "bp",
                            "name": "Blood pressure pill",
                            "who": "Dad",
                            "times": ["08:00"],
                        },
                        {"id": "statin", "name": "Statin", "who": "Dad", "times": ["21:00"]},
                        {"id": "thyroid", "name": "Thyroid", "who": "Mom", "times": ["07:00"]},
                    ]
                },
                "title": "Parents' Medicine Schedule",
                "requests": [
                    "set it up for my elderly parents' meds, I check on them from Houston"
                ],
                "zh": ["帮我改成爸妈的用药表，他们在国内，我每天远程提醒"],
                "tag": "for aging parents",
                "does": "tracks aging parents' medications",
                "why": ["my parents are in their 80s and I manage their meds from two states away"],
            },
        ],
    }
)

# 45 ----------------------------------------------------------------------- plants
ROOTS.append(
    {
        "key": "plant-watering",
        "title": "Houseplant Watering",
        "short": "Plant watering schedule",
        "engine": "interval",
        "category": "hobby",
        "popularity": 23,
        "gender": None,
        "tags": ["plants", "watering", "garden"],
        "summary": "Each plant's watering interval, what's thirsty today and what you drowned.",
        "bio": "43 houseplants, 1 cat who eats them",
        "story": (
            "I have 43 houseplants and was watering them all every Sunday, which is how I killed "
            "a snake plant (too much) and a fern (too little). Each plant has its own interval now "
            "and the list sorts itself by who's thirsty."
        ),
        "scopes": ["hobby.read", "hobby.write", "home.read"],
        "weather_ok": True,
        "config": {
            "currency": "USD",
            "tasks": [
                ["monstera", "Monstera", 7, 0],
                ["fiddle", "Fiddle leaf fig", 10, 0],
                ["snake", "Snake plant", 21, 0],
                ["herbs", "Kitchen herbs", 2, 0],
                ["orchid", "Orchid", 7, 0],
            ],
            "fields": [
                text("label", "Plant", maxlength=40),
                number("every", "Water every (days)", "", 7),
            ],
        },
        "forks": [
            {
                "id": "garden",
                "append": {"tasks": [["tomatoes", "Tomatoes", 2, 0], ["beans", "Beans", 3, 0]]},
                "requests": ["add the vegetable garden — tomatoes every 2 days, beans every 3"],
                "tag": "veggie garden",
                "does": "adds the vegetable garden",
                "why": ["the kids and I planted a vegetable garden this spring"],
            },
            {
                "id": "fertilize",
                "append": {"tasks": [["feed", "Fertilize everything", 30, 0]]},
                "requests": ["add fertilizing every 30 days"],
                "tag": "+ fertilizer",
                "does": "adds a monthly fertilizing reminder",
                "why": ["my monstera stopped putting out leaves"],
            },
        ],
    }
)

# 46 ----------------------------------------------------------------------- book club
ROOTS.append(
    {
        "key": "book-log",
        "title": "Book Club Log",
        "short": "Book log",
        "engine": "journal",
        "category": "hobby",
        "popularity": 22,
        "gender": "f",
        "tags": ["books", "reading", "book-club"],
        "summary": "Every book you finish with a rating, genre and a line for book club.",
        "bio": "book club host for 12 years, 60 books a year, audiobooks count",
        "story": (
            "I've hosted the same book club for twelve years and I can never remember what we read "
            "in 2019. Now every book gets stars, a genre and one line I'd say at book club. The "
            "search box settles 'did we already read this?' in seconds."
        ),
        "scopes": ["hobby.read", "hobby.write"],
        "config": {
            "currency": "USD",
            "priceField": "",
            "detailFields": ["genre", "pages"],
            "fields": [
                text("name", "Title", maxlength=80),
                select("rating", "Rating", STARS, default="4"),
                select(
                    "genre",
                    "Genre",
                    [
                        ["lit", "Literary"],
                        ["mystery", "Mystery"],
                        ["romance", "Romance"],
                        ["memoir", "Memoir"],
                        ["scifi", "Sci-fi & fantasy"],
                        ["nonfic", "Non-fiction"],
                    ],
                ),
                number("pages", "Pages", "", None),
                area("notes", "One line for book club", maxlength=200),
            ],
        },
        "forks": [
            {
                "id": "audio",
                "add_fields": [
                    extra(
                        select(
                            "format",
                            "Format",
                            [["print", "Print"], ["ebook", "E-book"], ["audio", "Audiobook"]],
                        )
                    )
                ],
                "requests": ["add the format — half my books are audiobooks on the school run"],
                "tag": "formats",
                "does": "records print, e-book or audiobook",
                "why": ["I 'read' most books in the minivan on the school run"],
            },
            {
                "id": "kids",
                "set": {
                    "fields.genre.options": [
                        ["picture", "Picture book"],
                        ["early", "Early reader"],
                        ["chapter", "Chapter book"],
                        ["graphic", "Graphic novel"],
                    ]
                },
                "title": "Kids' Book Log",
                "requests": [
                    "a version for my 8-year-old with picture books, chapter books and graphic novels"
                ],
                "tag": "for kids",
                "does": "uses kids' book categories",
                "why": ["my eight-year-old wanted her own book log like mine"],
            },
        ],
    }
)

# 47 ----------------------------------------------------------------------- coffee
ROOTS.append(
    {
        "key": "coffee-journal",
        "title": "Pour-over Coffee Journal",
        "short": "Coffee journal",
        "engine": "journal",
        "category": "hobby",
        "popularity": 15,
        "gender": "m",
        "tags": ["coffee", "brewing", "tasting"],
        "summary": "Beans, brew method, dose and a rating — so you can repeat the great cups.",
        "bio": "home barista, dad, owns three grinders (don't tell my wife)",
        "story": (
            "I brew pour-over every morning before the kids wake up, and when I nail a cup I never "
            "know why. Beans, method, grams and a rating, and the top-rated list tells me which "
            "Ethiopian to reorder."
        ),
        "scopes": ["hobby.read", "hobby.write"],
        "config": {
            "currency": "USD",
            "priceField": "price",
            "detailFields": ["origin", "brew", "grams", "price"],
            "fields": [
                text("name", "Beans", maxlength=60),
                select("rating", "Rating", STARS, default="4"),
                select(
                    "origin",
                    "Origin",
                    [
                        ["eth", "Ethiopia"],
                        ["col", "Colombia"],
                        ["ken", "Kenya"],
                        ["gua", "Guatemala"],
                        ["bra", "Brazil"],
                    ],
                ),
                select(
                    "brew",
                    "Method",
                    [
                        ["v60", "V60"],
                        ["aero", "AeroPress"],
                        ["french", "French press"],
                        ["chemex", "Chemex"],
                    ],
                ),
                number("grams", "Dose", "g", 18, step=0.5),
                number("price", "Bag price", "", None, step=0.01, money=True),
                area("notes", "Tasting notes", maxlength=200),
            ],
        },
        "forks": [
            {
                "id": "espresso",
                "gender": "m",
                "set": {
                    "fields.brew.options": [
                        ["espresso", "Espresso"],
                        ["ristretto", "Ristretto"],
                        ["lungo", "Lungo"],
                    ]
                },
                "add_fields": [extra(number("seconds", "Shot time", "s", 28))],
                "title": "Espresso Shot Journal",
                "requests": [
                    "I got an espresso machine — shot styles and shot time instead of pour-over methods"
                ],
                "tag": "espresso",
                "does": "logs espresso shots with shot time",
                "why": ["my wife got me an espresso machine and now I'm in trouble"],
            },
        ],
    }
)

# 48 ----------------------------------------------------------------------- tea (zh root)
ROOTS.append(
    {
        "key": "tea-journal",
        "title": "茶饮日记",
        "short": "茶饮日记",
        "engine": "journal",
        "category": "hobby",
        "popularity": 13,
        "gender": "m",
        "locale": "zh-CN",
        "lang": "zh",
        "tags": ["tea", "tasting", "chinese"],
        "summary": "记录喝过的每一泡茶：茶类、产地、价格和评分。",
        "bio": "杭州人，住在多伦多，每天一壶龙井",
        "story": (
            "我是杭州人，现在住在多伦多，每天早上一壶龙井。朋友送的茶越来越多，喝过哪一款、好不好都记不住。"
            "这个小程序让我给每一泡茶打分，还能按评分排序，去茶叶店时一看就知道该买什么。"
        ),
        "scopes": ["hobby.read", "hobby.write"],
        "config": {
            "currency": "CNY",
            "priceField": "price",
            "detailFields": ["kind", "origin", "price"],
            "fields": [
                text("name", "茶名", maxlength=40),
                select("rating", "评分", STARS, default="4"),
                select(
                    "kind",
                    "茶类",
                    [
                        ["green", "绿茶"],
                        ["oolong", "乌龙"],
                        ["black", "红茶"],
                        ["puer", "普洱"],
                        ["white", "白茶"],
                    ],
                ),
                text("origin", "产地", maxlength=40),
                number("price", "价格", "", None, step=0.01, money=True),
                area("notes", "品鉴笔记", maxlength=300),
            ],
        },
        "forks": [
            {
                "id": "cad",
                "set": {"currency": "CAD"},
                "requests": ["prices in CAD, I buy everything in Toronto now"],
                "zh": ["价格改成加元吧，我现在都在多伦多买茶"],
                "tag": "加元",
                "does": "shows prices in Canadian dollars",
                "why": ["现在茶叶都是在多伦多的茶庄买的"],
            },
            {
                "id": "brew",
                "add_fields": [
                    extra(number("temp", "水温", "°C", 85)),
                    extra(number("steeps", "泡数", "", 3)),
                ],
                "requests": ["add water temperature and number of steeps"],
                "zh": ["加上水温和冲泡次数", "想记录水温和第几泡最好喝"],
                "tag": "冲泡参数",
                "does": "records water temperature and steeps",
                "why": ["同一款乌龙，水温差五度味道完全不同"],
            },
        ],
    }
)

# 49 ----------------------------------------------------------------------- packing
ROOTS.append(
    {
        "key": "packing-list",
        "title": "Family Packing List",
        "short": "Packing list",
        "engine": "checklist",
        "category": "travel",
        "popularity": 26,
        "gender": "f",
        "tags": ["travel", "packing", "kids"],
        "summary": "A reusable family packing list with reminders counted back from departure.",
        "bio": "travel blogger, two kids under 6, carry-on only (mostly)",
        "story": (
            "Traveling with two kids under six, I forgot the stroller fan once and never again. "
            "My master packing list lives here with dates from departure: passports a month out, "
            "snacks the night before. I reset it after every trip."
        ),
        "scopes": ["travel.read", "travel.write"],
        "config": {
            "targetLabel": "Departure",
            "sections": [
                {
                    "title": "Documents",
                    "items": [
                        ["Passports (valid 6+ months)", -30],
                        ["Travel insurance", -21],
                        ["Boarding passes", -1],
                    ],
                },
                {
                    "title": "Kids",
                    "items": [
                        ["Snacks for the plane", -1],
                        ["Tablet + headphones charged", -1],
                        ["Car seat / booster", -3],
                    ],
                },
                {"title": "Toiletries", "items": [["Sunscreen", -3], ["Kids' medicine kit", -3]]},
            ],
            "fields": [
                text("text", "Item", maxlength=80),
                select("section", "Section", []),
                number("offset", "Days from departure", "", -1, lo=-90, hi=30),
            ],
        },
        "forks": [
            {
                "id": "beach",
                "append": {
                    "sections": [
                        {
                            "title": "Beach",
                            "items": [
                                ["Rash guards", -3],
                                ["Sand toys", -3],
                                ["Reef-safe sunscreen", -7],
                            ],
                        }
                    ]
                },
                "requests": ["add a beach section for our Cancún trip"],
                "es": ["agrega una sección de playa para el viaje a Cancún"],
                "tag": "beach trip",
                "does": "adds beach gear",
                "why": ["we're taking the kids to Cancún for spring break"],
            },
            {
                "id": "ski",
                "append": {
                    "sections": [
                        {
                            "title": "Ski",
                            "items": [
                                ["Helmets", -7],
                                ["Hand warmers", -3],
                                ["Lift tickets booked", -14],
                            ],
                        }
                    ]
                },
                "requests": ["ski trip to Banff — add ski stuff"],
                "tag": "ski trip",
                "does": "adds ski gear",
                "why": ["we're taking the kids on their first ski trip to Banff"],
            },
            {
                "id": "camping",
                "set": {"targetLabel": "Campout"},
                "append": {
                    "sections": [
                        {
                            "title": "Camp",
                            "items": [
                                ["Tent & footprint", -7],
                                ["Headlamps", -3],
                                ["Bear spray", -7],
                                ["Marshmallows", -1],
                            ],
                        }
                    ]
                },
                "title": "Family Camping Checklist",
                "requests": [
                    "turn it into a camping list — tent, headlamps, bear spray, marshmallows"
                ],
                "tag": "camping",
                "tags": ["camping"],
                "does": "adapts the list for camping",
                "why": ["we're doing Algonquin with the kids for the first time"],
            },
        ],
    }
)

# 50 ----------------------------------------------------------------------- trip countdown
ROOTS.append(
    {
        "key": "trip-countdown",
        "title": "Trip Countdown & Itinerary",
        "short": "Trip countdown",
        "engine": "events",
        "category": "travel",
        "popularity": 18,
        "gender": None,
        "tags": ["travel", "itinerary", "countdown"],
        "summary": "Flights, hotels and bookings in date order, with a countdown to each.",
        "bio": "plans vacations in spreadsheets, loves a countdown",
        "story": (
            "Half the fun of a trip is the countdown. I put flights, hotels and dinner reservations "
            "in, and it shows what's next and how many days away. My kids check it every morning "
            "before Disney."
        ),
        "scopes": ["travel.read", "travel.write", "calendar.read"],
        "config": {
            "soonDays": 30,
            "showWeeks": True,
            "fields": [
                text("title", "What", maxlength=60),
                date("date", "Date"),
                select(
                    "kind",
                    "Kind",
                    [
                        ["flight", "✈️ Flight"],
                        ["hotel", "🏨 Hotel"],
                        ["activity", "🎢 Activity"],
                        ["food", "🍽️ Reservation"],
                    ],
                ),
                check("yearly", "Every year"),
            ],
        },
        "forks": [
            {
                "id": "weeks",
                "set": {"soonDays": 60},
                "requests": ["count down from 60 days, we book early"],
                "tag": "60-day view",
                "does": "highlights the next 60 days",
                "why": ["we book our summer trip in March"],
                "changelog": "Highlights the next 60 days.",
            },
        ],
    }
)

# 51 ----------------------------------------------------------------------- phrasebook
ROOTS.append(
    {
        "key": "japan-phrases",
        "title": "Japan Trip Phrases",
        "short": "Travel phrase cards",
        "engine": "flashcards",
        "category": "travel",
        "popularity": 17,
        "gender": "f",
        "tags": ["japan", "language", "travel"],
        "summary": "Survival Japanese phrases as flashcards, for the two weeks before your trip.",
        "bio": "planning a Japan trip for 3 years, finally booked",
        "story": (
            "After three years of planning, we finally booked two weeks in Japan with the kids. "
            "I wanted the twenty phrases that matter — thank you, excuse me, where's the station — "
            "drilled until they come out without thinking."
        ),
        "scopes": ["travel.read", "study.write"],
        "config": {
            "reverse": False,
            "intervals": [0, 1, 2, 4, 7],
            "cards": [
                ["Thank you", "ありがとうございます (arigatō gozaimasu)"],
                ["Excuse me", "すみません (sumimasen)"],
                ["Where is the station?", "駅はどこですか (eki wa doko desu ka)"],
                ["Check, please", "お会計お願いします (okaikei onegaishimasu)"],
                [
                    "No peanuts, please",
                    "ピーナッツ抜きでお願いします (pīnattsu nuki de onegaishimasu)",
                ],
            ],
            "fields": [
                text("front", "English", maxlength=80),
                text("back", "Japanese", maxlength=80),
            ],
        },
        "forks": [
            {
                "id": "korea",
                "set": {
                    "cards": [
                        ["Thank you", "감사합니다 (gamsahamnida)"],
                        ["Excuse me", "저기요 (jeogiyo)"],
                        ["How much?", "얼마예요? (eolmayeyo)"],
                    ]
                },
                "title": "Korea Trip Phrases",
                "requests": ["same idea but for Seoul next spring"],
                "tag": "Seoul",
                "does": "swaps in Korean phrases",
                "why": ["we're going to Seoul next spring"],
            },
        ],
    }
)

# 52 ----------------------------------------------------------------------- bike commute
ROOTS.append(
    {
        "key": "bike-commute",
        "title": "Bike Commute Log",
        "short": "Bike commute log",
        "engine": "distance",
        "category": "travel",
        "popularity": 16,
        "gender": "m",
        "tags": ["cycling", "commute", "climate"],
        "summary": "Log rides to work and see kilometres and CO₂ saved versus driving.",
        "bio": "e-bike commuter, dad, answers every question with 'just bike it'",
        "story": (
            "I switched to an e-bike for my 9 km commute and wanted to know if it mattered. Every "
            "ride goes in with distance and time, and it adds up CO₂ saved against driving — "
            "about 120 g per km. I'm at 300 kg and counting."
        ),
        "scopes": ["fitness.read", "travel.write"],
        "weather_ok": True,
        "config": {
            "unit": "km",
            "weeklyGoal": 90,
            "co2PerUnit": 0.12,
            "chartDays": 14,
            "fields": [
                date("date", "Date"),
                number("distance", "Distance", "km", 9, step=0.1),
                number("minutes", "Minutes", "min", 28),
            ],
        },
        "forks": [
            {
                "id": "miles",
                "when": {"unit": "km"},
                "set": {
                    "unit": "mi",
                    "weeklyGoal": 55,
                    "co2PerUnit": 0.19,
                    "fields.distance.unit": "mi",
                    "fields.distance.default": 5.5,
                },
                "requests": ["miles please — I ride in Portland"],
                "tag": "miles",
                "does": "uses miles",
                "why": ["everything in Portland is in miles"],
            },
            {
                "id": "cargo",
                "add_fields": [extra(check("kids", "Kids on board"))],
                "requests": [
                    "add a 'kids on board' checkbox, I do school drop-off on the cargo bike"
                ],
                "tag": "cargo bike",
                "does": "marks school runs on the cargo bike",
                "why": ["we sold the second car and bought a cargo bike"],
            },
        ],
    }
)

# 53 ----------------------------------------------------------------------- bento (ja root)
ROOTS.append(
    {
        "key": "bento-planner",
        "title": "お弁当プランナー",
        "short": "お弁当プランナー",
        "engine": "mealplan",
        "category": "diet",
        "popularity": 14,
        "gender": "f",
        "locale": "ja-JP",
        "lang": "ja",
        "tags": ["bento", "lunch", "japanese"],
        "summary": "平日のお弁当の主菜と副菜を決めて、買い物リストを自動で作ります。",
        "bio": "二児の母、毎朝5時半からお弁当づくり",
        "story": (
            "毎朝5時半に起きて、夫と息子のお弁当を作っています。前の晩に「明日は何にしよう」と悩むのがつらくて、"
            "日曜日に一週間分の主菜と副菜を決めることにしました。買い物リストも自動でできるので、"
            "スーパーで迷わなくなりました。"
        ),
        "scopes": ["diet.read", "diet.write", "family.read"],
        "config": {
            "days": [["mon", "月"], ["tue", "火"], ["wed", "水"], ["thu", "木"], ["fri", "金"]],
            "meals": [["main", "主菜"], ["side", "副菜"]],
            "servings": 2,
            "baseServings": 1,
            "avoid": [],
            "avoidLabel": "",
            "busyDays": [],
            "recipes": [
                recipe("卵焼き", ["quick", "egg"], ("卵", 2, "個"), ("砂糖", 1, "小さじ")),
                recipe("唐揚げ", [], ("鶏もも肉", 150, "g"), ("片栗粉", 2, "大さじ")),
                recipe("鮭の塩焼き", ["fish", "quick"], ("鮭", 1, "切れ")),
                recipe("ほうれん草のおひたし", ["quick", "vegetarian"], ("ほうれん草", 0.5, "束")),
                recipe(
                    "きんぴらごぼう", ["vegetarian"], ("ごぼう", 0.5, "本"), ("にんじん", 0.3, "本")
                ),
                recipe("ミニトマト", ["quick", "vegetarian"], ("ミニトマト", 3, "個")),
                recipe("ハンバーグ", ["gluten"], ("合いびき肉", 120, "g"), ("パン粉", 2, "大さじ")),
            ],
            "fields": [
                text("name", "メニュー名", maxlength=40),
                area("ingredients", "材料（1行に1つ：材料, 量, 単位）"),
            ],
        },
        "forks": [
            {
                "id": "kids3",
                "set": {"servings": 3},
                "requests": ["three bentos now, my daughter started school"],
                "ja": [
                    "娘が小学校に入ったので、3人分にしてください",
                    "お弁当が3つになったので分量を3人分に",
                ],
                "tag": "3人分",
                "does": "scales bentos for three",
                "why": ["娘も小学校に入学して、お弁当が3つになりました"],
            },
            {
                "id": "egg-free",
                "append": {"avoid": ["egg", "卵"]},
                "set": {"avoidLabel": "卵なし"},
                "requests": ["my son is allergic to eggs, block egg dishes"],
                "ja": ["息子が卵アレルギーなので、卵を使うおかずを選べないようにしてください"],
                "tag": "卵なし",
                "does": "blocks egg dishes",
                "why": ["息子に卵アレルギーがあると分かりました"],
            },
        ],
    }
)

# 54 ----------------------------------------------------------------------- kakeibo (ja root)
ROOTS.append(
    {
        "key": "kakeibo",
        "title": "シンプル家計簿",
        "short": "家計簿",
        "engine": "budget",
        "category": "finance",
        "popularity": 15,
        "gender": "f",
        "locale": "ja-JP",
        "lang": "ja",
        "tags": ["kakeibo", "budget", "japanese"],
        "summary": "毎月の収入と支出をカテゴリ別に。食費の予算を超えると赤くなります。",
        "bio": "共働き、二児の母、家計簿歴15年",
        "story": (
            "家計簿をつけて15年、ノートからアプリまでいろいろ試しました。広告だらけのアプリに疲れて、"
            "必要なものだけの家計簿を作ってもらいました。食費の棒グラフが赤くなると、今月は外食を控えようと"
            "家族みんなで話せます。"
        ),
        "scopes": ["finance.read", "finance.write"],
        "config": {
            "currency": "JPY",
            "limits": {"food": 60000, "daily": 15000},
            "chartDays": 30,
            "fields": [
                select("kind", "種類", [["expense", "支出"], ["income", "収入"]]),
                number("amount", "金額", "円", None, step=1),
                select(
                    "category",
                    "カテゴリ",
                    [
                        ["food", "食費"],
                        ["daily", "日用品"],
                        ["housing", "住居"],
                        ["edu", "教育"],
                        ["transport", "交通"],
                        ["social", "交際費"],
                        ["medical", "医療"],
                        ["savings", "貯金"],
                        ["salary", "給料"],
                    ],
                ),
                text("note", "メモ", maxlength=60),
                date("date", "日付"),
            ],
        },
        "forks": [
            {
                "id": "lessons",
                "append": {"fields.category.options": [["lessons", "習い事"]]},
                "set": {"limits.lessons": 20000},
                "requests": ["add a category for the kids' lessons with a 20,000 yen limit"],
                "ja": ["子どもの習い事のカテゴリを追加して、予算は2万円にしてください"],
                "tag": "習い事",
                "does": "adds a lessons category",
                "why": ["子ども二人の習い事代が家計を圧迫しています"],
            },
        ],
    }
)

# 55 ----------------------------------------------------------------------- free throws
ROOTS.append(
    {
        "key": "free-throws",
        "title": "Free Throw Tracker",
        "short": "Free throw tracker",
        "engine": "drills",
        "category": "fitness",
        "popularity": 13,
        "gender": "m",
        "tags": ["basketball", "kids", "practice"],
        "summary": "Driveway shooting practice: makes, attempts and percentage by spot.",
        "bio": "youth basketball coach, dad of a point guard",
        "story": (
            "My 12-year-old wants to make the middle-school team and lives in the driveway. I coach "
            "his rec team, and shooting percentage by spot is the one stat that doesn't lie. He "
            "logs his own sets now, which is half the point."
        ),
        "scopes": ["fitness.read", "fitness.write", "family.read"],
        "config": {
            "drills": [
                ["ft", "Free throws", 70],
                ["elbow", "Elbow jumpers", 50],
                ["layup", "Left-hand layups", 75],
            ],
            "weeklyMinutes": 180,
            "chartDays": 14,
            "fields": [
                select(
                    "drill",
                    "Spot",
                    [
                        ["ft", "Free throws"],
                        ["elbow", "Elbow jumpers"],
                        ["layup", "Left-hand layups"],
                    ],
                ),
                number("attempts", "Attempts", "", 25),
                number("made", "Made", "", 15),
                number("minutes", "Minutes", "min", 30),
            ],
        },
        "forks": [
            {
                "id": "three",
                "append": {
                    "drills": [["three", "Corner threes", 35]],
                    "fields.drill.options": [["three", "Corner threes"]],
                },
                "requests": ["add corner threes, he's getting taller"],
                "tag": "corner threes",
                "does": "adds corner threes",
                "why": ["my son grew four inches this year and finally has the range"],
            },
        ],
    }
)

# 56 ----------------------------------------------------------------------- stroller walks
ROOTS.append(
    {
        "key": "stroller-walks",
        "title": "Stroller Walk Log",
        "short": "Stroller walk log",
        "engine": "distance",
        "category": "fitness",
        "popularity": 17,
        "gender": "f",
        "tags": ["walking", "new-mom", "stroller"],
        "summary": "Walks with the baby: distance, minutes and whether the baby napped.",
        "bio": "on maternity leave, 3 km loop around the lake daily",
        "story": (
            "On maternity leave, the daily stroller walk is my sanity and my only exercise. "
            "Distance and minutes, plus a checkbox for whether the baby napped — which is the "
            "real reason I walk."
        ),
        "scopes": ["fitness.read", "fitness.write"],
        "weather_ok": True,
        "config": {
            "unit": "km",
            "weeklyGoal": 15,
            "co2PerUnit": 0,
            "chartDays": 14,
            "fields": [
                date("date", "Date"),
                number("distance", "Distance", "km", 3, step=0.1),
                number("minutes", "Minutes", "min", 40),
                check("nap", "Baby napped", extra=True),
            ],
        },
        "forks": [
            {
                "id": "friends",
                "add_fields": [extra(check("group", "Walked with the mom group"))],
                "requests": ["add whether I walked with my mom group"],
                "tag": "mom group",
                "does": "marks walks with the mom group",
                "why": ["our mom group walks Tuesdays and Thursdays"],
            },
        ],
    }
)

# 57 ----------------------------------------------------------------------- dog walks
ROOTS.append(
    {
        "key": "dog-walks",
        "title": "Dog Walk Log",
        "short": "Dog walk log",
        "engine": "distance",
        "category": "hobby",
        "popularity": 16,
        "gender": None,
        "tags": ["dog", "walks", "pets"],
        "summary": "Walks with the dog, weekly distance and which family member took him.",
        "bio": "border collie owner, which means marathon walker",
        "story": (
            "A border collie needs more walking than a family of four can organise. Everyone logs "
            "their walk with distance, so we can see if he got his 30 km this week — and who's been "
            "skipping their turn."
        ),
        "scopes": ["pets.read", "pets.write", "family.read"],
        "weather_ok": True,
        "config": {
            "unit": "km",
            "weeklyGoal": 30,
            "co2PerUnit": 0,
            "chartDays": 14,
            "fields": [
                date("date", "Date"),
                number("distance", "Distance", "km", 2.5, step=0.1),
                number("minutes", "Minutes", "min", 35),
                select(
                    "walker",
                    "Walker",
                    [["mom", "Mom"], ["dad", "Dad"], ["kids", "Kids"]],
                    extra=True,
                ),
            ],
        },
        "forks": [
            {
                "id": "two",
                "add_fields": [
                    extra(select("dog", "Dog", [["biscuit", "Biscuit"], ["mochi", "Mochi"]]))
                ],
                "requests": ["we adopted a second dog, let me pick which dog"],
                "tag": "two dogs",
                "does": "logs walks per dog",
                "why": ["we adopted a second rescue in March"],
            },
        ],
    }
)
