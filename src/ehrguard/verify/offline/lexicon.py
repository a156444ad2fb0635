"""The word classes the question analysis looks for, written from general English grammar, not from benchmark items.

Each class is a category of descriptive linguistics, listed from that category (no SCARE or EHRSQL question was
read to write them; ``scripts/question_generalisation.py`` measures them on the SCARE dev split, which they never
saw, and on one database's questions after training on the other's):

- vague expressions: vague quantifiers (*many*, *a few*), relative gradable adjectives and adverbs whose standard
  comes from context (*high*, *long*, *frequent*, *recently*), evaluative and normative adjectives (*enough*,
  *severe*, *abnormal*, *stable*), approximators (*roughly*) and comparisons with an unstated norm (*than usual*);
- references that need an antecedent: demonstratives, third-person pronouns, references to earlier discourse
  (*aforementioned*, *the latter*) and temporal anaphora (*then*, *at that time*);
- requests outside retrieval: building or applying a model, forecasting, charts, causal claims, advice;
- phatic talk: greetings, thanks, leave-taking, questions about the assistant, everyday topics;
- questions a record of past care cannot answer: the future, schedules, hospital operations and policy.

The learned classifier weighs them with everything else; the lists only give it (and the reader of a verdict)
features that are easy to trace. The kinds of records that EHR schemas often lack are HL7 FHIR's resource kinds
(:data:`RECORD_KINDS`; the grounding check asks each database's schema whether it holds them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Vague quantifiers: an amount with no number.
QUANTIFIERS = ("many", "much", "few", "a few", "several", "numerous", "a lot", "lots", "plenty", "a handful", "countless",
                "a great deal", "a good number", "a large number", "a small number", "a couple of", "a bunch",
                # ... and of time: how long is a while?
                "a while", "a long time", "a short time", "a bit")
# Relative gradable adjectives and adverbs: "high" for what, "long" compared with what?
RELATIVE = ("high", "low", "large", "small", "big", "tiny", "huge", "long", "short", "lengthy", "brief", "prolonged", "heavy",
             "light", "fast", "slow", "rapid", "rapidly", "quick", "quickly", "sudden", "suddenly", "frequent", "frequently",
             "infrequent", "often", "rarely", "seldom", "rare", "common", "uncommon", "early", "late", "recent", "recently",
             "lately", "old", "young", "older", "younger", "elderly", "extended", "considerable", "considerably", "marked",
             "markedly", "slightly", "mildly", "moderately", "extremely", "very", "quite", "fairly", "relatively",
             "somewhat", "highly", "increased", "decreased", "reduced", "raised", "elevated", "depressed", "spiked", "dropped")
# Evaluative and normative adjectives: good or bad by whose measure, enough for what?
EVALUATIVE = ("good", "bad", "poor", "better", "worse", "unwell", "sick", "sicker", "healthy", "normal", "abnormal",
              "abnormally", "typical", "atypical", "usual", "unusual", "unusually", "standard",
               "expected", "unexpected", "unexpectedly", "enough", "adequate", "adequately", "inadequate", "sufficient",
               "sufficiently", "insufficient", "excessive", "excessively", "too much", "too many", "too high", "too low",
               "too long", "significant", "significantly", "substantial", "substantially", "serious", "seriously", "severe",
               "severely", "mild", "moderate", "critical", "critically", "dangerous", "dangerously", "risky", "high-risk",
               "low-risk", "concerning", "worrying", "worrisome", "alarming", "troubling", "problematic", "acceptable",
               "unacceptable", "appropriate", "inappropriate", "reasonable", "stable", "unstable", "improving", "worsening",
               "deteriorating", "controlled", "uncontrolled", "complicated", "complex", "difficult", "successful", "effective",
               "ineffective", "optimal", "suboptimal", "notable", "noteworthy", "interesting", "important", "relevant",
               "similar", "comparable", "strange", "odd", "weird", "irregular", "erratic", "borderline")
# Approximators and comparisons with a norm the question does not state.
APPROXIMATE = ("roughly", "approximately", "about as", "more or less", "or so", "give or take", "nearly", "almost", "close to",
                "than usual", "than normal", "than expected", "than typical", "than before", "than others", "than most",
                "than the norm", "above normal", "below normal", "out of range", "off the charts", "within limits")
VAGUE_WORDS = QUANTIFIERS + RELATIVE + EVALUATIVE + APPROXIMATE
# Clinical names with a word of degree in them: the word names, it does not grade. The question model reads them masked,
# as it reads the names the query looks for (features.mask_terms_of_art).
TERMS_OF_ART = (
    # a fluid, a drug class
    "normal saline", "low molecular weight",
    # a laboratory's critical (panic) values are defined per test, whatever noun follows ("critical lab values",
    # "critical lab rates", "critical laboratory results"); critical care is the ICU
    "critical care", "critical value", "critical values", "critical lab", "critical labs", "critical laboratory",
    "critical result", "critical results",
    # ... and of general clinical English: ICU-level illness, oxygen delivery, assays, lipoproteins, the blood pressure
    # conditions (hypertension, hypotension), statin intensity classes
    "critically ill", "critically-ill", "critical illness", "high flow", "high-flow", "low flow", "low-flow",
    "high sensitivity", "high-sensitivity", "high-density lipoprotein", "low-density lipoprotein",
    "high density lipoprotein", "low density lipoprotein", "high blood pressure", "low blood pressure",
    "high-intensity", "high intensity", "moderate-intensity", "moderate intensity", "low-intensity")
# Fixed phrases in which a word above states no vagueness: a bound, a duration or an amount asked for, a name.
# (A superlative, "the most frequent", is not vague either: features.py reads "most"/"least" + a word as one.)
NOT_VAGUE = ("at most", "at least", "how long", "how much", "how many", "how often",
             "as long as", "as many as", "as much as", "as often as", "no longer", "long-term", "short-term", "in short",
             "how old", "years old", "standard deviation", "high dose", "high-dose", "low dose", "low-dose",
             # "marked" as a verb, a label put on a record ("stays NOT marked expired", "marked as deceased")
             "marked as", "is marked", "are marked", "was marked", "were marked", "not marked", "been marked") + TERMS_OF_ART


# Words a laboratory's reference range defines for each test (a result above its range is "high", outside it "abnormal"),
# from the vocabulary of laboratory reports (the H / L / A flags and their words): where the query compares results with
# the records' own reference ranges or flags, the question's word has the records' meaning, not a threshold to guess.
RANGE_WORDS = ("abnormal", "abnormally", "normal", "high", "low", "elevated", "raised", "decreased", "reduced",
               "out of range", "out-of-range", "outside the normal range", "outside the reference range",
               "above the normal range", "below the normal range", "above normal", "below normal")
# Columns that hold such a range or flag (MIMIC-IV's labevents.ref_range_lower / ref_range_upper / flag, and the
# names other laboratory schemas give them).
RANGE_COLUMN = (r"ref(?:erence)?_?range|normal_?(?:low|high|min|max|range|lower|upper)"
                r"|^(?:(?:abn(?:ormal)?|lab|result)_?)?flag$|^(?:is_)?abnormal")


# Words that refer to something named elsewhere; the demonstratives are read with the noun they determine.
REFERENCE_WORDS = ("this", "that", "these", "those", "it", "its", "they", "them", "their", "theirs", "he", "she", "him",
                   "his", "her", "hers", "itself", "themselves", "himself", "herself")
# A preposition ends the phrase it starts: "the dose for this", "given before that".
PREPOSITION = r"(?:in|on|at|during|for|with|from|to|since|after|before|by|of|and|or|about|than|until|like|within|without)"
# Phrases that point back at an antecedent outside the question: references to earlier discourse ("the aforementioned
# test", "the latter", "as I said"), temporal anaphora ("since then", "at that time") and a demonstrative or pronoun as
# the object of a preposition that ends the question ("given after that?"). Only where no earlier clause of the
# question can hold the antecedent (features.py reads them before any comma). "The same" is not among them: within
# one question it points back at something the question names ("on the same day as the diagnosis"), or says one thing
# repeated ("the same drug in more than one admission"; tried as a reference when nothing is named before it, and taken
# out in session 21: an independent review showed that use is common).
UNRESOLVED_REFERENCES = (
    r"\b(?:the )?(?:aforementioned|above-?mentioned|afore-?said|previously mentioned|mentioned (?:above|earlier|before))\b"
    r"(?: \w+)?",
    r"\bthe (?:former|latter)\b",
    r"\b(?:the )?(?:one|ones) (?:above|before|mentioned|i mentioned|we discussed|we talked about|from before)\b",
    r"\b(?:as|like) (?:i|we) (?:said|mentioned|discussed)\b",
    r"\b(?:since|until|till|by|before|after|from|of) then\b",
    r"\bat that (?:time|point|moment)\b",
    # The distal demonstrative with a time or an episode points back ("since that day"); the proximal one anchors to
    # the present ("this year"), which the database's clock resolves. A relative clause after it says which one.
    r"\b(?:that|those) (?:day|days|week|weeks|month|months|year|years|time|times|morning|evening|night|moment|visit|visits|"
    r"stay|stays|admission|admissions|episode|event|occasion)\b(?! (?:when|where|that|which|in which|on which|of)\b)",
    # A demonstrative standing alone as a pronoun (before a preposition or at the end), and any such pronoun as the
    # object of a preposition that ends the question ("given after that?").
    rf"\b(?:\w+ )(?:this|these|those)(?= {PREPOSITION}\b|\s*[?.!]*\s*$)",
    rf"\b{PREPOSITION} (?:this|that|these|those|it|them)\s*[?.!]*\s*$",
)
# Words that follow the relative pronoun or conjunction "that" and never a demonstrative determiner (English grammar's
# closed classes: auxiliaries and modals, determiners, personal pronouns, prepositions, negation, and the common
# irregular past forms): "the stay that was", "the times that they", "the drug that began".
CLOSED_CLASS_AFTER_RELATIVE = frozenset((
    "is", "are", "was", "were", "be", "been", "being", "am", "has", "have", "had", "do", "does", "did", "will", "would",
    "shall", "should", "can", "could", "may", "might", "must",
    "the", "a", "an", "each", "every", "all", "any", "some", "no",
    "he", "she", "it", "they", "we", "you", "i", "his", "her", "their", "its",
    "in", "on", "at", "during", "for", "with", "from", "to", "since", "after", "before", "by", "of", "about", "within",
    "without", "until", "over", "under", "between", "also", "not", "never",
    "began", "came", "went", "got", "gave", "took", "made", "led", "ran", "saw", "grew", "fell", "rose", "left", "kept",
    "became", "underwent", "began", "showed", "shown", "given", "taken", "done", "seen", "grown", "written",
))

# Nouns that sum up what a question has just described, so that a demonstrative before them points back within the
# question (endophora) once it has: a group ("patients over 65 ... this cohort") or a criterion with its number ("a
# lactate above 4 mmol/L ... this threshold"). From English grammar's summarising nouns, not from any benchmark.
GROUP_NOUNS = frozenset(("cohort", "cohorts", "group", "groups", "population", "subgroup", "subgroups", "subset", "sample",
                         "patients", "individuals", "people", "persons", "subjects", "cases", "admissions", "stays"))
# ("this value" or "this level" asks which measurement, which no number says: not among them.)
CRITERION_NOUNS = frozenset(("threshold", "thresholds", "cutoff", "cutoffs", "limit", "limits", "criterion", "criteria",
                             "definition", "range", "ranges", "boundary"))
# Plural nouns for people or visits: what a group noun can sum up.
GROUP_MEMBERS = frozenset(("patients", "people", "individuals", "persons", "subjects", "adults", "men", "women",
                           "children", "cases", "admissions", "stays", "visits", "encounters", "cohort"))

# Nouns after a demonstrative that name a time ("this year"), which the database's clock resolves.
TIME_NOUNS = ("year", "month", "week", "day", "time", "hour", "morning", "afternoon", "evening", "night", "quarter", "decade",
              "century", "weekend", "semester", "season", "spring", "summer", "autumn", "fall", "winter", "minute", "shift")

# Requests that retrieval cannot fulfil: building or applying a model, forecasting, charts, causal claims, advice.
OUT_OF_SCOPE_CUES = (
    "predict", "predicts", "predicting", "prediction", "predictions", "predictive", "forecast", "forecasts", "forecasting",
    "machine learning", "deep learning", "neural network", "neural net", "random forest", "decision tree", "gradient boosting",
    "logistic regression model", "regression model", "classifier", "classification model", "language model", "transformer",
    "train a", "train an", "fine-tune", "fine tune", "build a model", "develop a model", "fit a model", "create a model",
    "cluster", "clusters", "clustering", "segmentation", "simulate", "simulation", "optimize", "optimise",
    "optimization", "dashboard", "visualize", "visualise", "visualization", "plot", "histogram", "scatter plot", "bar chart",
    "pie chart", "heatmap", "draw a", "causal", "causes", "caused by", "effect of", "impact of", "why did", "why does", "why is",
    "explain why", "recommend", "recommendation", "recommendations", "suggest", "advise", "advice", "should i", "should we",
    "what should", "best treatment", "treatment plan", "diagnose", "write a", "draft a", "compose", "summarize the notes",
    "translate", "synthetic data", "generate data", "survival analysis", "risk model", "algorithm", "image", "images",
)
# Phatic talk: greetings, thanks, leave-taking, the assistant itself, everyday topics.
SMALL_TALK_CUES = (
    "hello", "hi", "hey", "good morning", "good afternoon", "good evening", "good night", "how are you", "how's it going",
    "how is it going", "what's up", "nice to meet you", "thank you", "thanks", "much appreciated", "bye", "goodbye",
    "see you", "take care", "have a nice day", "who are you", "what is your name", "what's your name", "are you a robot",
    "are you human", "do you like", "do you love", "your favorite", "your favourite", "tell me a joke", "a joke", "funny",
    "weather", "rain", "sunny", "weekend", "vacation", "holiday", "holidays", "birthday", "coffee", "tea", "lunch", "dinner",
    "breakfast", "movie", "movies", "music", "song", "sports", "football", "soccer", "basketball", "baseball", "game last night",
    "tired", "bored", "boring", "stressed", "hobby", "hobbies",
)
# What a record of past care does not hold: the future, schedules, hospital operations and policy, prices.
INFEASIBLE_CUES = (
    "tomorrow", "next week", "next month", "next year", "next time", "in the future", "upcoming", "will be", "going to",
    "expected to", "likely to", "schedule", "scheduled", "appointment", "appointments", "visiting hours", "visiting time",
    "opening hours", "open today", "policy", "policies", "guideline", "guidelines", "protocol", "how do i",
    "how to", "on call", "on duty", "on shift", "staffing", "roster", "parking", "cafeteria", "canteen", "gift shop",
    "available beds", "bed availability", "waiting list", "waiting time", "wait time", "price of", "prices", "reimbursement",
    "insurance cover", "covered by insurance", "side effects", "side effect", "contraindication", "contraindications",
    "interaction between", "interactions", "dosage guideline", "recommended dose", "normal range", "reference range",
)


# The kinds of record an EHR interchange model names (HL7 FHIR: AllergyIntolerance, Immunization, FamilyMemberHistory,
# Patient.telecom/address, Practitioner, Appointment, ...) that EHR schemas often lack: how a question names each, and
# what a table or column holding it would be called. Read by the question features and by the grounding check.
@dataclass(frozen=True)
class RecordKind:
    name: str  # as the reason names it: "These records hold no {name}."
    cue: re.Pattern[str]  # how a question names it
    schema: tuple[str, ...]  # what a table or column holding it would be called (substrings)
    # Counted among the question classifier's features: the shipped models were trained with the kinds that are.
    feature: bool = True
    # Read in the question as written, not with the names the query looks for masked: what an x-ray showed is not
    # answered by the x-ray having been done, so the query naming it does not take the kind away.
    masked: bool = True


def cue(pattern: str) -> re.Pattern[str]:
    """A case-blind pattern of how questions name something."""
    return re.compile(pattern, re.IGNORECASE)


# Who treats patients, by role: general hospital usage (the specialists by their "-ologist" / "-iatrician" names).
_STAFF = (r"(?:doctor|physician|nurse|surgeon|attending|clinician|provider|pharmacist|therapist|intensivist|hospitalist|"
          r"resident|intern|consultant|anesthetist|anaesthetist|[a-z]+ologist|[a-z]+iatrician|prescriber|practitioner|"
          r"care team|on-call (?:doctor|physician|team))")
RECORD_KINDS = (
    RecordKind("allergy records", cue(r"\ballerg(?:y|ies|ic)\b|\banaphyla\w*"), ("allerg",)),
    RecordKind("immunization records", cue(r"\bvaccin\w*|\bimmuni[sz]ations?\b|\bflu shots?\b|\bbooster shots?\b"),
               ("vaccin", "immuniz")),
    RecordKind("family history", cue(r"\bfamily (?:medical )?history\b|\bhereditary\b|\brun(?:s)? in (?:the|his|her|their) family\b"),
               ("family",)),
    RecordKind("contact details", cue(r"\b(?:home|mailing|street|postal) address(?:es)?\b|\baddress(?:es)? of\b|'s address\b"
                                       r"|\b(?:phone|telephone|mobile) numbers?\b"
                                       r"|\be-?mail\b|\bzip codes?\b|\bpostal codes?\b|\bnext of kin\b|\bemergency contacts?\b"
                                       # where a patient lives: a residence, not a transfer source
                                       r"|\bout[- ]of[- ](?:state|town|country)\b|\bhome (?:state|town|county)\b|\bhometown\b"
                                       r"|\b(?:state|county|country|city) of residence\b|\bwhere (?:he|she|they|the patient) lives?\b"),
               ("address", "phone", "email", "zip", "contact")),
    RecordKind("records of who treated the patient", cue(
        rf"\b(?:name|names|identity) of (?:the |his |her |their )?(?:\w+ )?{_STAFF}s?\b|\b{_STAFF}'?s? names?\b"
        rf"|\bwho (?:was|were|is) (?:the |his |her |their )?(?:\w+ )?{_STAFF}\b|\bwhich {_STAFF}s?\b"
        # who did something to the patient: a member of staff, whom the records do not name ("who ordered the lasix");
        # "who was given", "who received", "patients who stopped their statin" ask which patients
        r"|(?<!patients )(?<!patient )(?<!people )\bwho (?:ordered|prescribed|administered|gave|performed|treated|operated on|"
        r"examined|saw|signed|wrote|documented|charted|entered|covered|intubated|inserted|drew|admitted|discharged|"
        r"cared for|looked after) (?:the|a|an|this|that|his|her|their|patient|pt|[\w-]+'s|\d[\d-]+)\b"),
               ("caregiver", "provider", "physician", "practitioner", "staff", "nurse")),
    RecordKind("appointments", cue(r"\bappointments?\b|\bfollow-?up (?:visit|appointment)s?\b"), ("appointment", "schedule")),
    RecordKind("occupation, education or income", cue(r"\boccupations?\b|\bemploy(?:ment|er)\b|\bemployed as\b|\bprofession\b|\bjob\b"
                                                        r"|\beducation(?:al)? (?:level|background)\b|\bincome\b|\bsalary\b"),
               ("occupation", "employ", "education", "income")),
    RecordKind("room or bed numbers", cue(r"\b(?:room|bed) (?:numbers?|no\.?)\b|\bwhich (?:room|bed)\b"), ("room", "bed")),
    RecordKind("blood type", cue(r"\bblood (?:type|group)s?\b|\babo (?:type|group)\b"), ("blood_type", "bloodtype", "abo")),
    # Staffing (FHIR PractitionerRole, Schedule): how many nurses or doctors were on duty, ratios of staff to patients.
    RecordKind("staffing levels", cue(r"\b(?:nurse|nursing|staff|physician|doctor)[- ]to[- ]patient\b|\bstaffing\b|\bstaff(?:ing)? "
                                      r"levels?\b|\b(?:nurses|doctors|physicians|staff) (?:on (?:duty|shift|call)|were working|working)\b"),
               ("staff", "caregiver", "shift", "roster"), feature=False),
    # FHIR Patient.communication: the language a patient speaks, and whether an interpreter is needed.
    RecordKind("language or interpreter needs", cue(r"\b(?:what|which|preferred|primary|native|spoken) languages?\b|\blanguages? "
                                                     r"(?:does|do|did|is|are)\b|\bspeaks?\b|\binterpreters?\b|\btranslators?\b"),
               ("language", "interpreter"), feature=False),
    # FHIR DocumentReference / Composition: what clinicians wrote, as text.
    RecordKind("clinical notes or reports", cue(
        r"\b(?:discharge|progress|nursing|nurse'?s|doctor'?s|physician'?s|clinical|clinician'?s|admission|operative|op|consult"
        r"(?:ation)?|triage|handover|shift|free-text|written) (?:notes?|summar(?:y|ies)|letters?)\b"
        r"|\b(?:radiology|pathology|histology|operative|surgical|imaging|echo(?:cardiogram)?|ecg|ekg|autopsy|consult(?:ation)?) "
        r"reports?\b|\b(?:in|from|according to|documented in) (?:the |his |her |their )?(?:\w+ )?notes\b|\bnarrative\b"),
               ("note", "report", "document", "narrative"), feature=False),
    # FHIR ImagingStudy / DiagnosticReport: what an image showed (that a scan was done can be a coded procedure).
    RecordKind("imaging results", cue(
        r"\b(?:x-?rays?|radiographs?|ct(?: scans?)?|cat scans?|mri(?: scans?)?|ultrasounds?|sonograms?|echocardiograms?|echo|"
        r"mammograms?|angiograms?|pet scans?|scans?|imaging|films?)\b(?:[ ,'-]+\w+){0,5}?[ ,'-]+"
        r"(?:show(?:s|ed|n)?|reveal(?:s|ed)?|findings?|impressions?|demonstrat(?:e|es|ed)|suggest(?:s|ed)?|look(?:s|ed)? like|images?)\b"
        # what it was read as: "was the CT positive for free air", "the chest film was normal"
        r"|\b(?:x-?rays?|radiographs?|ct(?: scans?)?|cat scans?|mri(?: scans?)?|ultrasounds?|sonograms?|echocardiograms?|echo|"
        r"mammograms?|angiograms?|pet scans?|scans?|imaging|films?)\b"
        r"(?:[ '-]+(?!who\b|that\b|which\b|and\b|how\b|many\b|later\b|tested\b|testing\b|were\b|had\b)[\w-]+){0,4}?"
        r"[ '-]+(?:(?:is|was|were|come back|came back) )?"
        r"(?:positive|negative) for\b|\b(?:x-?rays?|radiographs?|ct(?: scans?)?|cat scans?|mri(?: scans?)?|ultrasounds?|scans?|"
        r"imaging|films?) (?:(?!who\b|that\b|which\b|and\b)\w+ ){0,3}(?:was|were|is|came back|come back) "
        r"(?:normal|abnormal|clear|unremarkable|positive|negative)\b"
        r"|\b(?:was|were|is) (?:the |his |her |their |a )?(?:\w+ ){0,2}(?:x-?ray|radiograph|ct(?: scan)?|cat scan|mri|ultrasound|"
        r"echo(?:cardiogram)?|film|scan|imaging) (?:(?:of|for|on) (?:patient |stay )?[\w'-]+ )?"
        r"(?:normal|abnormal|clear|unremarkable|positive|negative)\b"
        r"|\b(?:findings|images|impression|reading) (?:of|from|on) (?:the |his |her |their |a )?(?:\w+ )?(?:x-?ray|radiograph|ct|"
        r"cat scan|mri|ultrasound|echo\w*|scan|imaging)\b"
        # what a radiologist read, or what was seen on an image ("a pneumothorax on the last chest film")
        r"|\bradiolog(?:ist|y)(?:'s)? (?:say|said|read|report\w*|impressions?|findings?)\b|\bwhat did the radiologist\b"
        r"|\b(?:on|in) (?:the |his |her |their |a |(?:the )?patient(?: \d+)?'s )(?:\w+ ){0,2}"
        r"(?:x-?ray|radiograph|film|ct scan|cat scan|mri|ultrasound|echo(?:cardiogram)?|sonogram)\b"
        r"(?! (?:was|were) (?:done|performed|ordered))"),
               ("radiology", "imaging", "image", "dicom"), feature=False, masked=False),
    # FHIR Observation, category social-history.
    RecordKind("social history (smoking, alcohol or drug use)", cue(
        r"\bsmok(?:e|es|ed|er|ers|ing)\b|\bcigarettes?\b|\bpack[- ]years?\b|\bvap(?:e|es|ing)\b"
        r"|\b(?:drink|drinks|drinking|drank) (?:alcohol|beer|wine|liquor|spirits)\b|\balcohol (?:use|intake|consumption|habits?)\b"
        r"|\bhow much (?:alcohol|beer|wine)\b|\b(?:recreational|illicit|street) drugs?\b|\bsocial history\b"),
               ("smok", "tobacco", "alcohol", "social"), feature=False),
    # FHIR Claim / ExplanationOfBenefit: what was billed to whom (a cost table holds amounts, not claims).
    RecordKind("insurance claims or billing codes", cue(
        r"\b(?:insurance )?claims? (?:amount|status|number|submitted|sent|filed|denied|paid)\b|\b(?:insurance|billing) claims?\b"
        r"|\binvoices?\b|\breimburs\w*|\bco-?pays?\b|\bdeductibles?\b|\bbilling codes?\b"
        # what was paid, by whom (a cost is what was charged)
        r"|\b(?:get|got|gets|getting|was|were|been|be) paid\b|\bpayments?\b|\bamounts? paid\b|\bout[- ]of[- ]pocket\b"
        r"|\b(?:cpt|hcpcs)(?: codes?)?\b|\bdrgs?(?: codes?| payments?| weights?)?\b|\bdiagnosis[- ]related groups?\b"),
               ("claim", "invoice", "reimburs", "billing", "copay", "cpt", "hcpcs", "drg"), feature=False),
    # FHIR Coverage: who pays.
    RecordKind("insurance details", cue(r"\binsurance\b|\binsur(?:er|ers|ed)\b|\b(?:health )?(?:plan|coverage) (?:type|provider)\b"),
               ("insur", "payer", "coverage"), feature=False),
    # US Core's race and ethnicity of a patient: some schemas keep them (eICU's ethnicity), others do not.
    RecordKind("race or ethnicity", cue(r"\brace\b|\bracial\b|\bethnicit(?:y|ies)\b|\bethnic (?:group|background|origin)s?\b"),
               ("race", "ethnic"), feature=False),
    # FHIR FamilyMemberHistory: a relative's health is not the patient's record.
    RecordKind("records of family members' health", cue(
        r"\b(?:his|her|their|the patient'?s|(?:patient|pt)(?:\s+[\w-]+)?\s*'s|\d[\d-]{3,}'s) "
        r"(?:mother|father|parents?|brothers?|sisters?|siblings?|sons?|"
        r"daughters?|grand(?:mother|father|parents?)|relatives?|family members?|twin)\b"
        r"|\b(?:in|of) (?:(?:the|his|her|their|patient|patient's|\d+'s)\s+){1,3}family\b"
        r"(?!\s+(?:medicine|practice|practitioners?|physicians?|doctors?|nurses?|planning|rooms?|meetings?|services?))"),
               ("family", "relative"), feature=False),
)
