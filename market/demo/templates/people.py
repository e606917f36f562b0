# ruff: noqa: E501  -- data module: name lists and persona sentences are prose; wrapping them hurts reading.
"""Names, places and lifestyle personas for demo users.

Sprig's audience skews toward parents in North America (many of them women over
30), with a Chinese-, Japanese- and Spanish-speaking minority that the agent also
serves. Names are tagged f/m/n so a persona never says "mom" for someone the demo
presents as a dad. Street names and towns are generic, and every phone number is in
the reserved 555-01xx range, so nothing here points at a real person.
"""

from __future__ import annotations

# (first name, gender)
FIRST_EN: list[tuple[str, str]] = [(n, "f") for n in ["Maya", "Jessica", "Sarah", "Emily", "Ashley", "Lauren", "Priya", "Aisha", "Mei", "Olivia", "Hannah", "Rachel", "Megan", "Nicole", "Amanda", "Jennifer", "Michelle", "Stephanie", "Rebecca", "Danielle", "Kristen", "Erin", "Heather", "Katie", "Natalie", "Vanessa", "Monica", "Tanya", "Keisha", "Latoya", "Fatima", "Zainab", "Leila", "Sofia", "Camila", "Chloe", "Zoe", "Claire", "Julia", "Anna", "Grace", "Ruth", "Nadia", "Ingrid", "Hana", "Linh", "Anjali", "Deepa", "Kavya", "Simone", "Amara", "Chioma", "Ngozi", "Aaliyah", "Brianna", "Tiffany", "Kelsey", "Courtney", "Lindsey", "Molly", "Brooke", "Paige", "Melissa", "Christina", "Andrea", "Erica", "Jasmine", "Alicia", "Tamara", "Yasmin", "Noor", "Elena", "Marisol", "Rosa", "Beth", "Carly", "Dana", "Gina", "Holly", "Jenna", "Kara", "Lisa", "Mara", "Nina", "Tessa", "Valerie", "Wendy", "Harper", "Abby", "Allison", "Caroline", "Diana", "Lucy", "Naomi", "Sabrina"]] + [(n, "m") for n in ["James", "Michael", "David", "Daniel", "Chris", "Kevin", "Jason", "Ryan", "Marcus", "Andre", "Omar", "Raj", "Arjun", "Ben", "Sam", "Tom", "Nate", "Eric", "Derek", "Tyler", "Jamal", "Darnell", "Ahmed", "Hassan", "Minh", "Tuan", "Paul", "Mark", "Greg", "Scott", "Luke", "Adam", "Brian", "Matt", "Josh", "Kyle", "Sean", "Victor", "Hector", "Ravi", "Vikram", "Tariq", "Isaac", "Noah", "Owen", "Caleb", "Evan", "Simon"]] + [(n, "n") for n in ["Alex", "Jordan", "Taylor", "Casey", "Riley", "Jamie", "Morgan", "Robin", "Avery", "Quinn", "Sasha", "Drew"]]

LAST_EN: list[str] = ["Okafor", "Nguyen", "Patel", "Garcia", "Smith", "Johnson", "Williams", "Brown", "Jones", "Miller", "Davis", "Rodriguez", "Martinez", "Hernandez", "Lopez", "Wilson", "Anderson", "Thomas", "Moore", "Jackson", "Martin", "Lee", "Perez", "Thompson", "White", "Harris", "Sanchez", "Clark", "Ramirez", "Lewis", "Robinson", "Walker", "Young", "Allen", "King", "Wright", "Scott", "Torres", "Hill", "Flores", "Green", "Adams", "Nelson", "Baker", "Hall", "Rivera", "Campbell", "Mitchell", "Carter", "Roberts", "Kim", "Park", "Chen", "Wang", "Singh", "Shah", "Khan", "Ali", "Cohen", "Friedman", "O'Brien", "MacDonald", "Tremblay", "Gagnon", "Roy", "Bouchard", "Leblanc", "Mensah", "Adeyemi", "Haddad", "Sullivan", "Murphy", "Kowalski", "Novak", "Schultz", "Larsen", "Johansson", "Rossi", "Bianchi", "Costa", "Silva", "Santos", "Reyes", "Cruz", "Morales", "Ortiz", "Gutierrez", "Chavez", "Ramos", "Ibrahim", "Hussein", "Yilmaz", "Dubois", "Fischer", "Weber", "Horvat", "Abbott", "Brooks", "Bryant", "Coleman", "Diaz", "Ellis", "Foster", "Gray", "Hayes", "Hughes", "Jenkins", "Kelly", "Long", "Myers", "Owens", "Price", "Reed", "Ross", "Stewart", "Ward", "Wood"]

FIRST_FR: list[tuple[str, str]] = [(n, "f") for n in ["Émilie", "Geneviève", "Catherine", "Isabelle", "Mélanie", "Julie", "Stéphanie", "Chantal", "Sophie", "Annie"]] + [
    (n, "m") for n in ["Mathieu", "Olivier", "Jean-François", "Simon", "Étienne"]]
LAST_FR: list[str] = ["Tremblay", "Gagnon", "Roy", "Côté", "Bouchard", "Gauthier", "Morin", "Lavoie", "Fortin", "Gagné", "Pelletier"]

FIRST_ES: list[tuple[str, str]] = [(n, "f") for n in ["María", "Fernanda", "Guadalupe", "Daniela", "Valeria", "Ximena", "Lucía", "Paola", "Andrea", "Gabriela", "Mariana", "Sofía", "Adriana", "Alejandra", "Verónica"]] + [(n, "m") for n in ["José", "Luis", "Carlos", "Diego", "Alejandro", "Jorge", "Miguel", "Ricardo", "Emiliano"]]
LAST_ES: list[str] = ["García", "Hernández", "López", "Martínez", "González", "Rodríguez", "Pérez", "Sánchez", "Ramírez", "Flores", "Torres", "Rivera", "Gómez", "Díaz", "Vargas", "Castillo", "Jiménez", "Mendoza", "Ruiz", "Aguilar"]

# (hanzi, pinyin)
SURNAME_ZH: list[tuple[str, str]] = [
    ("王", "wang"), ("李", "li"), ("张", "zhang"), ("刘", "liu"), ("陈", "chen"), ("杨", "yang"),
    ("黄", "huang"), ("赵", "zhao"), ("吴", "wu"), ("周", "zhou"), ("徐", "xu"), ("孙", "sun"),
    ("马", "ma"), ("朱", "zhu"), ("胡", "hu"), ("郭", "guo"), ("林", "lin"), ("何", "he"),
]
GIVEN_ZH: list[tuple[str, str, str]] = [
    ("芳", "fang", "f"), ("静", "jing", "f"), ("丽", "li", "f"), ("敏", "min", "f"), ("婷", "ting", "f"),
    ("雪", "xue", "f"), ("慧", "hui", "f"), ("晓燕", "xiaoyan", "f"), ("欣怡", "xinyi", "f"),
    ("佳琪", "jiaqi", "f"), ("思琪", "siqi", "f"), ("梦瑶", "mengyao", "f"), ("雨婷", "yuting", "f"),
    ("伟", "wei", "m"), ("强", "qiang", "m"), ("磊", "lei", "m"), ("浩", "hao", "m"),
    ("俊杰", "junjie", "m"), ("子轩", "zixuan", "m"), ("文博", "wenbo", "m"),
]

# (kanji, romaji)
SURNAME_JA: list[tuple[str, str]] = [
    ("佐藤", "sato"), ("鈴木", "suzuki"), ("高橋", "takahashi"), ("田中", "tanaka"),
    ("伊藤", "ito"), ("渡辺", "watanabe"), ("山本", "yamamoto"), ("中村", "nakamura"),
    ("小林", "kobayashi"), ("加藤", "kato"), ("吉田", "yoshida"), ("山田", "yamada"),
]
GIVEN_JA: list[tuple[str, str, str]] = [
    ("由美", "yumi", "f"), ("恵", "megumi", "f"), ("さくら", "sakura", "f"), ("陽子", "yoko", "f"),
    ("美咲", "misaki", "f"), ("愛", "ai", "f"), ("真由美", "mayumi", "f"), ("彩", "aya", "f"),
    ("奈々", "nana", "f"), ("健太", "kenta", "m"), ("翔", "sho", "m"), ("大輔", "daisuke", "m"),
    ("拓也", "takuya", "m"),
]

LOCALES: list[tuple[str, int]] = [
    ("en-US", 58), ("en-CA", 16), ("fr-CA", 3), ("es-MX", 8), ("zh-CN", 6), ("ja-JP", 5),
    ("en-GB", 2), ("es-US", 2),
]

AREA_CODES: dict[str, list[str]] = {
    "en-US": ["415", "212", "617", "512", "206", "303", "312", "404", "503", "619", "614", "919",
              "602", "713", "952", "801"],
    "es-US": ["305", "213", "210", "915"],
    "en-CA": ["416", "604", "403", "613", "204", "902", "780"],
    "fr-CA": ["514", "418", "819"],
}

STREETS: list[str] = [
    "Elm Street", "Maple Avenue", "Oak Lane", "Cedar Drive", "Birch Road", "Willow Court",
    "Pine Crescent", "Lakeview Drive", "Hillcrest Road", "Orchard Way", "Sunset Boulevard",
    "Mill Road", "Park Place", "Chestnut Street", "Juniper Trail", "Meadow Lane",
]
TOWNS: dict[str, list[str]] = {
    "US": ["Springfield", "Riverton", "Fairview", "Lakewood", "Cedar Falls", "Greenville",
           "Franklin", "Clinton", "Madison", "Georgetown", "Salem", "Ashland"],
    "CA": ["Maple Ridge", "Riverside Heights", "Pine Lake", "Northbrook", "Westmount Park",
           "Lakeshore"],
}

HANDLE_SUFFIXES: list[str] = [
    "runs", "bakes", "lifts", "reads", "cooks", "plans", "sews", "hikes", "swims", "writes",
]
HANDLE_PREFIXES: dict[str, list[str]] = {
    "f": ["coach", "chef", "mama", "auntie", "nurse", "dr", "the"],
    "m": ["coach", "chef", "papa", "uncle", "nurse", "dr", "the"],
    "n": ["coach", "chef", "nurse", "dr", "the"],
}

# A persona is one lifestyle: which categories they care about (first is strongest),
# short bios, and the first sentence of a fork story in their voice. "{parent}" is
# "mom"/"dad"/"parent" from the user's name; "{Parent}" capitalised.
PERSONAS: list[dict[str, object]] = [
    {"id": "new-parent", "weight": 9, "cats": ["family", "sleep", "hydration", "mood", "fitness"],
     "bios": ["new {parent}, running on coffee and four hours of sleep",
              "first-time {parent} to a 5-month-old", "{parent} of a newborn and a very jealous dog"],
     "intros": ["I'm a new {parent} — our daughter is four months old and sleep is a rumour.",
                "Our son was born in March and my brain has been mush ever since.",
                "I'm on parental leave with our first baby and trying to keep some routine."]},
    {"id": "parent-of-two", "weight": 12, "cats": ["family", "diet", "finance", "study", "sleep"],
     "bios": ["{parent} of two, minivan DJ", "{parent} of a 6- and a 9-year-old, PTA survivor",
              "soccer {parent}, snack-rotation coordinator", "{parent} of two, lunchbox engineer"],
     "intros": ["I'm a {parent} of two and our evenings are a logistics puzzle.",
                "With a six- and a nine-year-old, every weeknight is a relay race.",
                "I'm the {parent} who keeps the family calendar, for better or worse."]},
    {"id": "big-family", "weight": 5, "cats": ["family", "diet", "finance"],
     "bios": ["{parent} of four, Costco regular", "{parent} of five, professional laundry folder"],
     "intros": ["We have four kids, so anything that saves me ten minutes a day is gold.",
                "I'm a {parent} of five; if it isn't simple, it doesn't survive our house."]},
    {"id": "working-mom", "weight": 10, "gender": "f",
     "cats": ["family", "finance", "mood", "fitness", "diet"],
     "bios": ["working mom, product manager, kids 4 and 7", "lawyer and mom of two",
              "nurse, mom of three, night-shift veteran", "teacher by day, mom of two by night"],
     "intros": ["I'm a working mom with two kids under eight, so my spare time comes in 10-minute pieces.",
                "I work full time as a nurse and my kids are 5 and 9.",
                "I'm a teacher and a mom of two, which means I plan everything twice."]},
    {"id": "runner", "weight": 6, "cats": ["fitness", "hydration", "diet", "sleep"],
     "bios": ["half-marathoner, 5 a.m. runner", "training for my first marathon at 42",
              "trail runner, {parent} of two"],
     "intros": ["I'm training for my first marathon at 42.",
                "I run five mornings a week before anyone else is awake.",
                "I'm vegetarian and training for a half marathon."]},
    {"id": "lifter", "weight": 5, "cats": ["fitness", "diet", "sleep"],
     "bios": ["garage-gym lifter", "powerlifter, {parent}, 40+",
              "started strength training at 45 and never looked back"],
     "intros": ["I started strength training at 45 and it changed how I feel every day.",
                "I lift four days a week in my garage while the kids nap."]},
    {"id": "tennis", "weight": 3, "cats": ["fitness", "hobby"],
     "bios": ["tennis champion of my club (twice)", "ex-college tennis player, {parent} of two",
              "pickleball convert"],
     "intros": ["I won my club tennis championship twice and I'm still chasing a better serve.",
                "I played tennis in college and came back to it after the kids."]},
    {"id": "wine", "weight": 4, "cats": ["hobby", "diet", "travel"],
     "bios": ["wine lover, book club host", "sommelier in training", "natural wine enthusiast"],
     "intros": ["I'm a wine lover and my book club is mostly a wine club.",
                "I'm studying for my first sommelier exam."]},
    {"id": "musician", "weight": 4, "cats": ["hobby", "study", "mood"],
     "bios": ["learning piano at 40", "church choir alto, piano beginner", "violin {parent}"],
     "intros": ["I'm learning piano at 40, alongside my daughter.",
                "I picked music back up after twenty years away."]},
    {"id": "mover", "weight": 5, "cats": ["family", "travel", "finance"],
     "bios": ["just moved to Toronto", "moved to Vancouver from Seoul", "new in Calgary, kids 3 and 8",
              "moved from Texas to Ontario last summer"],
     "intros": ["We just moved to Toronto with two kids and a cat.",
                "We relocated to Calgary for my job last spring.",
                "I moved to Vancouver from overseas and I'm still figuring everything out."]},
    {"id": "student", "weight": 5, "cats": ["study", "mood", "finance", "sleep"],
     "bios": ["nursing student, {parent} of one", "grad student, coffee powered",
              "back in school at 36", "MCAT prep survivor"],
     "intros": ["I went back to school at 36 and I'm juggling classes with a toddler.",
                "I'm a grad student and my schedule is chaos."]},
    {"id": "health", "weight": 5, "cats": ["diet", "sleep", "mood", "fitness"],
     "bios": ["type 2 diabetic, cooking my way healthier", "migraine warrior",
              "perimenopause is a whole thing", "recovering from a knee injury"],
     "intros": ["I was diagnosed with type 2 diabetes last year and I'm figuring out food again.",
                "Perimenopause turned my sleep and my moods upside down.",
                "I'm coming back from a knee injury and have to track everything for my physio."]},
    {"id": "hydration", "weight": 4, "cats": ["hydration", "fitness", "diet"],
     "bios": ["drinks 3 litres of water a day", "forever refilling a 40 oz tumbler",
              "hydration nerd"],
     "intros": ["I drink three litres of water a day and I'm weirdly proud of it.",
                "I carry a 40 oz tumbler everywhere and still forget to drink."]},
    {"id": "budgeter", "weight": 5, "cats": ["finance", "family", "diet"],
     "bios": ["debt-free journey, year 3", "coupon {parent}", "FIRE-curious accountant"],
     "intros": ["We're on year three of paying off debt and every dollar has a job.",
                "I'm an accountant, so of course our family runs on budgets."]},
    {"id": "foodie", "weight": 5, "cats": ["diet", "family", "hobby"],
     "bios": ["home cook, sourdough starter named Gary", "meal-prep Sunday devotee",
              "vegetarian, cooks for a family of meat-eaters"],
     "intros": ["I cook dinner from scratch most nights, which means I plan a lot.",
                "I'm the vegetarian cooking for a family of meat-eaters."]},
    {"id": "wellbeing", "weight": 6, "cats": ["mood", "sleep", "fitness"],
     "bios": ["therapy advocate, journaling daily", "meditator, recovering perfectionist",
              "yoga teacher, {parent} of one"],
     "intros": ["I've been in therapy for two years and tracking helps me notice things.",
                "I meditate every morning, or at least I try to."]},
    {"id": "caregiver", "weight": 3, "cats": ["family", "mood", "finance"],
     "bios": ["caring for my mom and my kids", "sandwich generation, {parent} of two"],
     "intros": ["I'm caring for my elderly parents and my own kids at the same time.",
                "My mom moved in with us last year, so I'm looking after three generations."]},
    {"id": "traveler", "weight": 4, "cats": ["travel", "finance", "hobby"],
     "bios": ["travels with kids, carry-on only", "road-trip {parent}", "points-and-miles hobbyist"],
     "intros": ["We travel with our kids as often as we can afford to.",
                "Every summer we do a big family road trip."]},
    {"id": "gardener", "weight": 3, "cats": ["hobby", "family", "diet"],
     "bios": ["backyard gardener, 43 houseplants", "community-garden plot holder"],
     "intros": ["I have a vegetable garden and far too many houseplants."]},
    {"id": "retiree", "weight": 2, "cats": ["fitness", "hobby", "mood", "sleep"],
     "bios": ["retired teacher, grandmother of five", "retired and learning everything I missed"],
     "intros": ["I retired last year and finally have time for hobbies.",
                "I'm a grandparent of five and I babysit three days a week."]},
    {"id": "shift-worker", "weight": 3, "cats": ["sleep", "hydration", "mood", "diet"],
     "bios": ["ER nurse, night shift", "paramedic, {parent}", "airline pilot, jet-lagged"],
     "intros": ["I work rotating night shifts, so 'normal' schedules don't fit me.",
                "I'm a paramedic and my sleep schedule is a crime scene."]},
    {"id": "teen-parent", "weight": 4, "cats": ["family", "study", "mood", "finance"],
     "bios": ["{parent} of teenagers (send help)", "raising two teens and a golden retriever"],
     "intros": ["I have two teenagers, which means negotiations are a daily sport.",
                "My kids are 13 and 16 and they both need to learn to plan their own time."]},
    {"id": "pet-owner", "weight": 3, "cats": ["hobby", "family", "fitness"],
     "bios": ["dog mom to a border collie", "two rescue dogs and a cat"],
     "intros": ["We have two rescue dogs who run this household."]},
    {"id": "zh-parent", "weight": 0, "cats": ["family", "study", "diet", "hobby"],
     "bios": ["多伦多的上班族妈妈", "温哥华，两个孩子，周末中文学校", "在加拿大带娃的新手爸爸"],
     "intros": ["我们一家住在多伦多，两个孩子都在上小学。", "我在温哥华带两个孩子，周末送他们去中文学校。"]},
    {"id": "ja-parent", "weight": 0, "cats": ["family", "diet", "finance", "sleep"],
     "bios": ["共働きの二児の母", "バンクーバー在住、子育て中", "毎朝お弁当づくり"],
     "intros": ["共働きで、子どもが二人います。", "バンクーバーで子育てをしています。"]},
    {"id": "es-parent", "weight": 0, "cats": ["family", "finance", "diet", "fitness"],
     "bios": ["mamá de dos en Guadalajara", "papá corredor, CDMX", "mamá trabajadora en Monterrey"],
     "intros": ["Soy mamá de dos y trabajo tiempo completo.", "Vivimos en Monterrey con tres niños."]},
]

# What people say after a fork has been in use for a while, per category.
OUTCOMES: dict[str, list[str]] = {
    "hydration": ["Three weeks in, I actually finish my bottle before school pickup.",
                  "My headaches at 4 p.m. are basically gone.",
                  "The chart is embarrassingly motivating."],
    "diet": ["It's the first food log I've kept for more than a week.",
             "Grocery day takes twenty minutes now instead of an hour.",
             "My dietitian asked where I got it."],
    "fitness": ["Two months in and I haven't missed a week.",
                "My coach likes it better than the spreadsheet I used to send.",
                "Seeing the numbers go up is the whole reason I show up."],
    "mood": ["It's become a two-minute habit at bedtime.",
             "My therapist and I look at it together now.",
             "Patterns I never noticed are suddenly obvious."],
    "sleep": ["I'm averaging forty minutes more than a month ago.",
              "It turns out weekends were the problem all along.",
              "Even my partner started logging."],
    "finance": ["We finished last month under budget for the first time this year.",
                "No more arguments about who paid for what.",
                "It's the only budget my partner actually opens."],
    "study": ["The kids fight over who gets to log first.",
              "I passed the exam I was most scared of.",
              "Their teacher noticed the difference by October."],
    "family": ["The morning chaos is down to a low roar.",
               "Grandma uses it too, which I did not see coming.",
               "My partner and I finally stopped double-booking."],
    "hobby": ["It's the most fun I've had with a spreadsheet that isn't one.",
              "My shelf of favourites is finally written down.",
              "Friends keep asking for a copy."],
    "travel": ["Our last trip was the least stressful one yet.",
               "Nothing got left behind this time, not even the charger.",
               "Settling up took thirty seconds instead of three group chats."],
}
OUTCOMES_ZH = ["用了一个月，全家都离不开它了。", "现在老人也会用，省了我很多事。", "朋友看到后也让我分享给她。"]
OUTCOMES_JA = ["一か月使って、すっかり習慣になりました。", "家族みんなで使っています。", "友だちにも教えました。"]
OUTCOMES_ES = ["Después de un mes, ya es parte de la rutina.", "Ahora toda la familia lo usa.",
               "Mis amigas me pidieron una copia."]
