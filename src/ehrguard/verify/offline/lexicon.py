"""Word lists the question analysis uses. General clinical/English knowledge, not benchmark items.

Each list is small on purpose: the learned classifier does most of the work, and these
lists give it (and the reader of a verdict) features that are easy to trace.
"""

from __future__ import annotations

# Qualifiers with no agreed threshold: a query needs a number or a definition for them.
VAGUE_WORDS = (
    "significant", "significantly", "sufficient", "sufficiently", "enough", "long", "longer than usual", "short",
    "usual", "unusual", "unusually", "more than usual", "less than usual", "higher than usual", "lower than usual",
    "critical", "critically", "relatively", "relatively high", "relatively low", "comparable", "similar",
    "high-risk", "high risk", "low-risk", "recent", "recently", "lately", "elevated", "abnormal", "abnormally",
    "severe", "serious", "excessive", "excessively", "substantial", "considerable", "notable", "noticeable",
    "a lot", "lots of", "a few", "several", "frequent visits", "prolonged", "extended", "brief",
    "typical", "atypical", "concerning", "worrying", "worrisome", "alarming", "too high", "too low",
)  # not "many" ("how many"), nor words that occur inside diagnosis names ("major", "mild", "moderate", ...)

# Words that point back to something the question never named.
REFERENCE_WORDS = ("this", "that", "these", "those", "it", "its", "they", "them", "their", "theirs", "he", "she", "him",
                   "his", "her", "hers", "then", "such", "the same one", "said", "aforementioned", "above", "former", "latter")

# A pronoun standing alone ("... associated with that?", "patients who underwent this in 2100") or a moment
# named only by pointing back ("since then", "at that time"): the question never says what it refers to.
PREPOSITION = r"(?:in|on|at|during|for|with|from|to|since|after|before|by|of|and|or)"
UNRESOLVED_REFERENCES = (
    rf"\b(?:this|these|those)\s+(?:{PREPOSITION}\b|[?.!,]|$)",
    (rf"\b(?:with|for|about|to|of|from|after|before|underwent|undergo|received|receive|had|have|given|take|took|taken)\s+"
     rf"(?:this|that|these|those|it|them)\s*(?:{PREPOSITION}\b|[?.!,]|$)"),
    r"\b(?:since|until|till|before|after|from)\s+then\b",
    r"\b(?:that|this)\s+(?:day|time|moment|date|period|point|visit|stay|admission|encounter)\b",
    r"\b(?:at|during|in|within|by)\s+that\s+(?:time|day|moment|period)\b",
)

# After "this"/"that"/"last"/"next", these nouns are anchored in time, not references.
TIME_NOUNS = ("year", "month", "week", "day", "time", "hour", "morning", "evening", "night", "quarter", "semester", "decade")

# Tasks beyond a single SQL query.
OUT_OF_SCOPE_CUES = (
    "predict", "prediction", "predictive", "forecast", "train", "training", "machine learning", "deep learning",
    "neural network", "model to", "a model", "classifier", "classify", "cluster", "clustering", "segment", "generate",
    "synthesize", "synthetic", "simulate", "simulation", "regression", "random forest", "xgboost", "gradient boosting",
    "transformer", "lstm", "gan", "feature importance", "key features", "shap", "optimize", "recommend", "causal",
    "image", "images", "x-ray", "ct scan images", "mri images", "visualize", "plot", "chart of", "dashboard",
    "translate", "summarize", "write a", "draft", "explain why", "hypothesis", "survival analysis", "cox",
)

# Conversation with no database content.
SMALL_TALK_CUES = (
    "how are you", "good morning", "good night", "thank you", "thanks", "weather", "weekend", "coffee", "lunch",
    "cafeteria", "parking", "favorite", "favourite", "joke", "movie", "music", "song", "sports", "game", "holiday",
    "vacation", "traffic", "tired", "busy today", "do you think", "do you ever", "did you know", "are you",
    "can you believe", "i can't believe", "i can’t believe", "shift", "nights or days", "birthday", "pizza", "hobby",
)

# What an EHR of this kind does not hold: administrative, personal, operational or future facts.
INFEASIBLE_CUES = (
    "reimburse", "reimbursement", "insurance claim", "visiting hours", "schedule", "scheduled", "appointment",
    "outpatient", "rounds", "dr.", "doctor", "physician's name", "nurse's name", "operating rooms", "quarantine",
    "isolation", "precaution", "precautions", "protocol", "guideline", "side effect", "side effects", "will patient",
    "will the", "next visit", "next hospital visit", "tomorrow", "next week", "covid", "travel", "overseas",
    "family history", "disinfect", "policy", "cost of parking", "phone", "address", "email",
)

# Attributes a question may ask for that the EHRSQL-style schemas have no column for.
MISSING_ATTRIBUTES = (
    "address", "home address", "phone number", "telephone", "email", "zip code", "blood type", "blood group",
    "occupation", "job", "employer", "education", "income", "religion", "nationality", "social security",
    "emergency contact", "next of kin", "height in feet", "shoe size", "eye color", "hair color", "smoking status",
    "alcohol use", "diet", "dietary", "room number", "bed number", "floor", "transfer mode", "mode of transfer",
    "approved", "approval", "department", "attending", "nurse", "doctor's name", "physician", "surgeon", "referral",
    "infection flag", "isolation status", "discharge summary", "note", "notes", "source room", "destination room",
    "vaccination", "vaccine", "pain score", "satisfaction", "primary care",
)
