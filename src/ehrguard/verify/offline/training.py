"""Training data and training of the question classifier (``ehrguard train question-model``).

Sources, all ones we may train on:

* EHRSQL-2024 MIMIC-IV train: answerable questions, and its unanswerable ones (mostly
  hospital-operations and administrative questions, labelled ``infeasible-faq`` here);
* on request (``--mimicsql``), a sample of MIMICSQL's dev questions: answerable questions in another style, so that
  wording unlike EHRSQL's is not read as a question the records cannot answer (its test split is kept for measuring
  that). Not in the shipped model: it costs ambiguous and unanswerable recall on SCARE (docs/safety.md);
* questions we generate from our own templates (:func:`generated_questions`): vague words (from the
  lexicon's word classes) and unresolved references injected into EHRSQL answerable questions, keyword-only
  questions, small talk, out-of-scope requests, attributes EHR schemas often lack (HL7 FHIR's);
* optionally the SCARE dev split (question + subtype only);
* on request (``--with-safety``, ``--safety FILE``), our safety cases (ours and the read halves of the blind sets,
  never their unread halves): questions in clinicians' own words, terse or role-prefixed ("Pharmacy: ...", "foley
  output today?"), labelled by what their case says of the question (:func:`safety_subtype`). Not in the shipped
  models: it lowers over-caution on the blind sets' unread halves a lot and costs unanswerable recall on SCARE
  (docs/safety.md, session 23).

Evaluation on SCARE dev is by grouped cross-validation: each fold's questions are never
in its training set (a question recurs with several candidates; all copies stay together).
"""

from __future__ import annotations

import json
import random
import re
import zlib
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ehrguard.labels import ANSWERABLE_TYPES
from ehrguard.verify.offline.classifier import CLASSES, QuestionModel, featurize, train_softmax
from ehrguard.verify.offline.embedding import Embedder
from ehrguard.verify.offline.features import mask_values, question_cues
from ehrguard.verify.offline.lexicon import EVALUATIVE, RELATIVE

# The vague adjectives of the lexicon that fit the templates below ("patients with {word} stays").
_VAGUE = tuple(w for w in RELATIVE + EVALUATIVE if " " not in w and not w.endswith("ly") and w not in ("often", "very", "quite"))

# Keyword-only questions: kinds of record and the common panels of general medicine (vital signs, the basic metabolic
# panel, the complete blood count, liver and coagulation tests), not names taken from a benchmark.
_CONCEPTS = ("labs", "lab results", "lab values", "vitals", "vital signs", "medications", "meds", "drugs", "prescriptions",
             "diagnoses", "diagnosis", "procedures", "allergies", "history", "notes", "results", "status", "events", "orders",
             "imaging", "cultures", "microbiology", "inputs", "outputs", "fluids", "intake", "urine output", "weight", "height",
             "bmi", "age", "admission", "discharge", "transfer", "icu", "stay", "ward", "insurance", "cost", "blood pressure",
             "heart rate", "pulse", "temperature", "respiratory rate", "oxygen saturation", "spo2", "pain", "sodium", "potassium",
             "chloride", "bicarbonate", "bun", "creatinine", "glucose", "calcium", "magnesium", "phosphate", "hemoglobin",
             "hematocrit", "white blood cells", "wbc", "platelets", "inr", "ptt", "bilirubin", "alt", "ast", "albumin", "lactate",
             "troponin", "antibiotics", "insulin", "anticoagulants", "sedation", "ventilation", "dialysis", "infection")

# Phatic talk, by kind: greeting, thanks, leave-taking, the assistant itself, feelings, everyday topics.
_SMALL_TALK = (
    # greetings, thanks, leave-taking
    "Hello there!", "Hi, how are you today?", "Good {daypart}!", "Hey, how's your {day} going?", "Good {daypart}, how are things?",
    "Thanks a lot for the help.", "Thank you, that was useful.", "Cheers, you're a lifesaver.", "Bye for now.", "See you {when}.",
    "Have a good {day}!", "Sorry to bother you again.", "Nice talking to you.",
    # the assistant itself
    "Who made you?", "Are you a person or a program?", "What's your name?", "Do you have feelings?", "How old are you?",
    "Do you ever sleep?", "Where do you live?", "Do you get tired of questions?", "What do you do for fun?",
    # feelings and work life
    "I'm exhausted after this {shift} shift.", "I'm bored.", "What a {day} it has been.", "I could really use a {drink}.",
    "Do you think I work too much?", "My feet hurt after this {shift} shift.", "Can we just chat for a minute?",
    # everyday topics: food, weather, sports, entertainment, holidays, family
    "What should I have for {meal}?", "Any good {thing} recommendations?", "Did you see the {sport} game?",
    "Who's going to win the {sport} final?", "What's the weather like {when}?", "Is it going to {weather} on my way home?",
    "Happy {holiday}!", "Where are you going on {holiday}?", "Tell me something funny.", "Do you like {thing}?",
    "How was your {day}?", "What's your favorite {thing}?", "My kids want a puppy, any advice?", "Is the {drink} here any good?",
    "Can you recommend a {thing} for the weekend?", "What's the best {meal} place nearby?", "Do you play any sports?",
    "I just got back from {holiday}.", "It's so {weather_adj} today.", "What time is it where you are?", "Tell me a fun fact.",
    # the same, at work: colleagues, the break room, the commute
    "Is there any {drink} left in the break room?", "Did you hear who got promoted in the {unit}?", "The {unit} is so quiet today.",
    "My colleague keeps stealing my {meal}.", "Traffic was terrible this morning.", "Do you know a good place to park near the hospital?",
    "Are you coming to the {holiday} party?", "Which team do you support in the {sport} league?",
    "Can you believe this {weather_adj} weather?",
    "I haven't slept since my {shift} shift.", "Do you think robots will replace nurses?", "What's your opinion on {thing}s?",
    "Guess what happened in the {unit} today.", "How do you stay so calm?", "Tell me about yourself.", "Are you having a good {day}?",
)
_SLOTS = {
    "daypart": ("morning", "afternoon", "evening"), "day": ("day", "week", "weekend", "monday", "night"),
    "when": ("tomorrow", "later", "tonight", "this weekend"), "shift": ("night", "late", "double", "weekend"),
    "drink": ("coffee", "tea", "break"), "meal": ("lunch", "dinner", "breakfast"),
    "thing": ("movie", "book", "podcast", "music", "restaurant", "series"), "sport": ("football", "basketball", "hockey", "tennis"),
    "weather": ("rain", "snow", "storm"), "holiday": ("holiday", "vacation", "new year", "summer break"),
    "weather_adj": ("hot", "cold", "windy", "humid", "gloomy"),
}
# Requests beyond retrieval, by kind: a model to build or apply, a forecast, a chart, a causal or explanatory claim,
# advice, writing, images, general medical knowledge.
_OOS_VERBS = ("Train", "Build", "Develop", "Fit", "Design", "Can you build", "Please train", "I want you to build")
_OOS_MODELS = ("a model", "a machine learning model", "a neural network", "a classifier", "a regression model", "a risk score",
               "a decision tree", "an ensemble model", "a deep learning pipeline")
_OOS_TASKS = ("to predict {outcome}", "that forecasts {outcome}", "to estimate each patient's risk of {outcome}",
              "to group patients by {feature}", "to flag {outcome} early", "to choose the treatment for {outcome}")
_OOS_OTHER = ("Forecast {outcome} for the next {period}.", "What will drive {outcome} next {period}?",
              "Plot {feature} against {outcome}.", "Draw a chart of {feature} over time.", "Make a dashboard of {feature}.",
              "Why does {feature} lead to {outcome}?", "Does {feature} cause {outcome}?", "Explain the mechanism behind {outcome}.",
              "What is the best way to prevent {outcome}?", "Recommend a treatment plan to avoid {outcome}.",
              "Write a discharge letter for patient {pid}.", "Draft an email to the family of patient {pid}.",
              "Summarize the clinical notes of patient {pid}.", "Read the chest x-ray of patient {pid}.",
              "What does the ct scan of patient {pid} show?", "What are the symptoms of {outcome}?",
              "Run a survival analysis of {outcome}.", "Simulate {outcome} under a new policy.",
              "Which factors best explain {outcome}?", "Rank the patients by their risk of {outcome}.",
              "Estimate how much {feature} changes the odds of {outcome}.", "Compare two treatments for {outcome} in a trial design.",
              "Is {feature} a good predictor of {outcome}?", "How accurate would a model of {outcome} be?",
              "Identify hidden subgroups of patients from {feature}.", "Detect anomalies in {feature} automatically.",
              "Translate the discharge instructions of patient {pid} into spanish.", "Create a care plan for patient {pid}.",
              "What dose of {drug} should patient {pid} get?", "Should patient {pid} be moved out of the icu?",
              "Generate a synthetic cohort that looks like these patients.", "Write python code to analyse {feature}.",
              "Build a report on {outcome} with charts for the board.", "What would have happened if patient {pid} got {drug}?",
              "Give me a differential diagnosis for patient {pid}.", "Interpret the ecg of patient {pid}.",
              "Explain to me what {outcome} is.", "What are the guidelines for treating {outcome}?",
              "How does {drug} work?", "What is the normal range of {feature}?", "Which is better for {outcome}, {drug} or {drug2}?",
              "Teach me how to read {feature}.", "What research exists on {feature} and {outcome}?",
              "Calculate the sample size for a study of {outcome}.", "Group the icu stays into phenotypes.")
_DRUGS = ("heparin", "insulin", "vancomycin", "furosemide", "morphine", "warfarin", "propofol")
_OUTCOMES = ("death", "readmission", "transfer to the icu", "sepsis", "kidney injury", "delirium", "a fall", "bleeding",
             "respiratory failure")
_FEATURES = ("age", "lab values", "vital signs", "comorbidities", "medications", "the care unit", "time of admission")
# "The X of patient N" for what an EHR schema often lacks (HL7 FHIR's Patient, Encounter and Observation elements
# outside the usual research schemas) and, answerable, for what they hold.
_MISSING_FORMS = ("What is the {attr} of patient {pid}?", "What was patient {pid}'s {attr}?",
                  "Tell me the {attr} of patient {pid} on the last hospital visit.",
                  "What {attr} was recorded for patient {pid} during the first icu stay?", "Show the {attr} for patient {pid}.",
                  "Which {attr} did patient {pid} have in their first hospital encounter?",
                  "How many patients have their {attr} recorded?", "List the {attr} of every patient admitted in {year}.",
                  "Count the patients by {attr}.", "Was the {attr} of patient {pid} ever updated?")
_EVENT_FORMS = ("What was the {attr} of the last {event} of patient {pid}?", "Who was the {attr} for patient {pid}'s {event}?",
                "Show the {attr} of each {event} in {year}.", "What {attr} was used for the first {event} of patient {pid}?")
_MISSING_ATTRS = ("home address", "phone number", "email address", "emergency contact", "next of kin", "primary care physician",
                  "general practitioner", "attending physician's name", "nurse's name", "photo", "blood group", "blood type",
                  "smoking status", "alcohol use", "occupation", "employer", "education level", "income", "religion",
                  "vaccination history", "allergy list", "family history", "room number", "bed number", "diet preference",
                  "special arrangements", "preferred pharmacy", "advance directive", "organ donor status", "birth weight",
                  "preferred name", "nationality", "country of birth", "housing status", "living situation", "number of children")
# Elements of FHIR's MedicationRequest, Procedure, Observation and Specimen that research schemas seldom keep.
_EVENT_ATTRS = ("prescribing doctor", "reason", "indication", "brand name", "manufacturer", "lot number", "performing surgeon",
                "anesthesia type", "body site", "laterality", "device used", "method", "person who collected the sample",
                "ordering clinician", "approval time", "billing code status", "pharmacist who checked it", "room it took place in")
_EVENTS = ("prescription", "procedure", "lab test", "blood culture", "surgery", "transfusion", "infusion", "vital sign measurement")
# What a record of past care cannot say, by kind: the future, schedules, staffing and facilities, policy, prices,
# general drug knowledge. (EHRSQL-2024's own unanswerable questions are the other half of this class.)
_INFEASIBLE = ("When will patient {pid} be discharged?", "Will patient {pid} need another {event}?",
               "Is patient {pid} going to be transferred {when}?", "What time is patient {pid}'s next {event}?",
               "Who is on call in the {unit} {when}?", "How many nurses work the night shift in the {unit}?",
               "Are there free beds in the {unit} right now?", "What are the visiting hours of the {unit}?",
               "Where is the {unit}?", "Is the pharmacy open {when}?", "What is the hospital's policy on {topic}?",
               "How do I request {topic} for a patient?", "How much does a {event} cost at this hospital?",
               "Does insurance cover a {event}?", "What are the side effects of {drug}?", "Can {drug} be given with {drug2}?",
               "What is the adult dose of {drug}?", "How long is the waiting list for a {event}?",
               "Which doctor will see patient {pid} {when}?", "When is the next staff meeting of the {unit}?")
_UNITS = ("icu", "emergency department", "cardiology ward", "surgical ward", "maternity unit", "oncology unit")
_TOPICS = ("visitors", "isolation", "interpreters", "parking permits", "overtime", "home care", "organ donation")
_PRESENT_ATTRS = ("gender", "age", "date of birth", "marital status", "insurance", "language", "race", "ethnicity", "admission type",
                  "admission location", "discharge location", "hospital admission time", "hospital discharge time", "admission weight",
                  "admission height", "first care unit", "last care unit", "discharge weight", "hospital discharge status",
                  "date of death", "unit admission time", "length of stay")
_PID = re.compile(r"\bpatient (\d{3}-\d{3,7}|\d{4,9})('s)?")
_REFS = (("this patient", "this patient's"), ("that patient", "that patient's"), ("the patient", "the patient's"),
         ("them", "their"), ("him", "his"), ("her", "her"))


def _fill(rng: random.Random, template: str) -> str:
    values = {k: rng.choice(v) for k, v in _SLOTS.items()}
    values.update(outcome=rng.choice(_OUTCOMES), feature=rng.choice(_FEATURES), pid=str(rng.randint(10000000, 10099999)),
                  period=rng.choice(("month", "year", "quarter")), drug=rng.choice(_DRUGS), year=str(rng.randint(2100, 2105)),
                  event=rng.choice(_EVENTS), unit=rng.choice(_UNITS), topic=rng.choice(_TOPICS), drug2=rng.choice(_DRUGS),
                  when=rng.choice(_SLOTS["when"]), attr="{attr}")
    return template.format(**values)


def _inject_vague(rng: random.Random, q: str) -> str:
    word = rng.choice(_VAGUE)
    forms = (
        lambda s: (_PID.sub(lambda m: f"patients with {word} stays", s, count=1) if _PID.search(s)
                   else s.rstrip("?.") + f" in {word} cases?"),
        lambda s: s.rstrip("?.") + f" that appeared {word}?",
        lambda s: re.sub(r"\b(patients|drugs|medications|diagnoses|procedures|tests)\b", f"{word} \\1", s, count=1),
        lambda s: re.sub(r"\b(the )?(top|first|last) (\w+)\b", f"the {word}", s, count=1),
        lambda s: re.sub(r"\b(since|in|within) (\d{4}|\d+ \w+ ago|the last \w+|last \w+)", f"over a {word} period", s, count=1),
    )
    for f in rng.sample(forms, len(forms)):
        out = f(q)
        if out != q:
            return out
    return q.rstrip("?.") + f" with {word} values?"


def _inject_reference(rng: random.Random, q: str) -> str:
    if _PID.search(q) and rng.random() < 0.7:
        plain, possessive = rng.choice(_REFS)
        return _PID.sub(lambda m: possessive if m.group(2) else plain, q, count=1)
    forms = (
        lambda s: re.sub(r"\b(the|their) (current|first|last) (hospital visit|icu visit|hospital encounter|icu stay)\b",
                         lambda m: rng.choice(("this", "that")) + " " + m.group(3), s, count=1),
        lambda s: re.sub(r"\b(prescribed|diagnosed with|received|had) ([a-z0-9][^?,]{6,60}?)( on| in| since| within|\?|$)",
                         lambda m: f"{m.group(1)} {rng.choice(('it', 'this', 'that drug', 'these', 'the same one'))}{m.group(3)}",
                         s, count=1),
        lambda s: s.rstrip("?.") + rng.choice((" after that?", " before then?", " for them?", " during this stay?")),
    )
    for f in rng.sample(forms, len(forms)):
        out = f(q)
        if out != q:
            return out
    return q


def _vague_question(rng: random.Random) -> str:
    c = rng.choice(_CONCEPTS)
    forms = ("{c}?", "{c}?", "{c} {d}?", "{c} results?", "{C}?", "any {c}?", "{c} and {d}?", "about the {c}?", "{c} trend?",
             "latest {c}?", "{c} levels?")
    return rng.choice(forms).format(c=c, d=rng.choice(_CONCEPTS), C=c.title())


# Cohort questions as clinical researchers write them: explicit criteria (age range, sex, condition, time window), a
# statistic, often a comparison or a stratification, sometimes a case in front ("For a 70-year-old woman with
# sepsis: ..."), and references back to the cohort the question has just defined ("this cohort", "their", "those
# who"). Written from general clinical-research phrasing; the conditions, measures and treatments are common ones.
_CONDITIONS = ("sepsis", "septic shock", "heart failure", "acute kidney injury", "pneumonia", "COPD", "type 2 diabetes",
               "atrial fibrillation", "ischemic stroke", "myocardial infarction", "gastrointestinal bleeding", "cirrhosis",
               "diabetic ketoacidosis", "pulmonary embolism", "hip fracture", "chronic kidney disease", "ARDS", "delirium",
               "hypertension", "asthma", "cardiac arrest", "trauma", "intracranial hemorrhage", "urinary tract infection")
_MEASURES = ("serum creatinine", "lactate", "hemoglobin", "potassium", "sodium", "troponin T", "white blood cell count",
             "platelet count", "glucose", "total bilirubin", "heart rate", "mean arterial pressure", "respiratory rate",
             "oxygen saturation", "temperature", "INR", "albumin", "bicarbonate", "urine output", "GCS score")
_OUTCOMES_COHORT = ("in-hospital mortality", "30-day readmission rate", "ICU length of stay", "hospital length of stay",
                    "90-day mortality", "rate of discharge home", "time to ICU discharge", "number of ICU days")
_TREATMENTS = ("vasopressors", "mechanical ventilation", "insulin", "heparin", "broad-spectrum antibiotics", "dialysis",
               "a blood transfusion", "diuretics", "beta blockers", "anticoagulation")
_STATISTICS = ("the mean", "the median", "the 75th percentile of", "the 90th percentile of", "the 25th percentile of",
               "the interquartile range of", "the maximum", "the minimum", "the average", "the standard deviation of")
_POPULATIONS = ("patients", "ICU patients", "inpatients", "hospital admissions", "ICU stays", "adults")
_WINDOWS = ("within the first 24 hours of admission", "during the first 48 hours of the ICU stay", "on the first ICU stay",
            "over the whole admission", "in the first 6 hours after ICU admission", "during the first 72 hours",
            "before discharge", "within 7 days of admission", "on the day of admission")
_STRATA = ("stratified by sex", "by age decade", "by quartile of {measure}", "compared with all other admissions",
           "for those with and without {condition2}", "split by whether they received {treatment}", "by admission type")
_COHORT_FORMS = (
    "{frame}Among {sex} {population} aged {a} to {b} with {condition}, what is {stat} {measure} {window}?",
    "{frame}For {population} aged {a}-{b} with {condition}, report {stat} {measure} {window}, {strata}.",
    "{frame}Among {sex} {population} with {condition}, how many received {treatment} {window}, and what was their {outcome}?",
    "{frame}In {population} aged {a}-{b} with {condition}, compare {stat} {measure} {window} between those who died in "
    "hospital and those who survived.",
    "{frame}What share of {sex} {population} aged {a}-{b} with {condition} had a {measure} above {num} {window}? For this "
    "cohort, give the {outcome}.",
    "{frame}Among {population} with {condition} who received {treatment}, what is {stat} {outcome}, {strata}?",
    "{frame}Stratify {sex} {population} aged {a}-{b} with {condition} into quartiles of {measure} {window} and report the "
    "{outcome} in each quartile.",
    "{frame}For {sex} {population} with {condition} on their first ICU stay, what is {stat} {measure}? Compare it with "
    "that of all ICU stays.",
)
_FRAMES = ("", "", "", "For a {age}-year-old {person} with {condition}: ", "I have a {age}-year-old {person} with {condition}. ",
           "My patient is a {age}-year-old {person}. ", "Patient: {sex_word}, {age}. ")


def _cohort_question(rng: random.Random, framed: bool = True) -> str:
    a = rng.randrange(18, 90)
    condition = rng.choice(_CONDITIONS)
    values = {"a": str(a), "b": str(a + rng.choice((5, 10, 15))), "condition": condition,
              "condition2": rng.choice(_CONDITIONS), "measure": rng.choice(_MEASURES), "outcome": rng.choice(_OUTCOMES_COHORT),
              "treatment": rng.choice(_TREATMENTS), "stat": rng.choice(_STATISTICS), "population": rng.choice(_POPULATIONS),
              "window": rng.choice(_WINDOWS), "num": str(rng.choice((1.5, 2, 4, 5.5, 10, 90, 100, 120, 140))),
              "sex": rng.choice(("male", "female", "")), "age": str(a + 3), "person": rng.choice(("man", "woman", "patient")),
              "sex_word": rng.choice(("male", "female"))}
    values["strata"] = rng.choice(_STRATA).format(**values)
    values["frame"] = rng.choice(_FRAMES).format(**values) if framed else ""
    return re.sub(r"\s{2,}", " ", rng.choice(_COHORT_FORMS).format(**values))


def cohort_questions(seed: int = 0, n: int = 600) -> list[tuple[str, str]]:
    """Generated cohort questions: ``n`` answerable ones, and ``n / 4`` each with a vague word and with a reference to
    nothing (in the first clause), so that length and analytic vocabulary alone do not read as ambiguity."""
    rng = random.Random(seed + 7919)  # its own stream: the other generated questions stay as they were
    out = [(_cohort_question(rng), "answerable") for _ in range(n)]
    for _ in range(n // 4):
        out.append((_inject_vague(rng, _cohort_question(rng)), "vague-word"))
        q = _cohort_question(rng, framed=False)
        out.append((rng.choice(("For that cohort, ", "For those patients, ", "In this group, ")) + q[0].lower() + q[1:],
                    "ambiguous-reference"))
    return out


# Point questions as clinicians ask them at the bedside or the desk: one patient or a simple count, a superlative, a
# duration in a unit, a dose, a route, the current stay. Written from general clinical English about the kinds of record
# EHR research schemas hold (demographics, stays, drugs, labs and vitals, inputs and outputs, costs), not from a
# benchmark's questions, so that plain wording unlike EHRSQL's templates is not read as unanswerable.
_BEDSIDE_FORMS = (
    "How old is the {oldest} patient{scope}?", "What is the age of the {oldest} {sex} patient{scope}?",
    "Which patient was the {oldest} at admission{scope}?", "How long was the {ordinal} {stay} of patient {pid} in {tunit}?",
    "How many {tunit} did patient {pid} spend in the {place} during the {ordinal} {stay}?",
    "What was the {extreme} dose of {drug} ordered for patient {pid}?", "What was the {extreme} {measure} ever recorded for patient {pid}?",
    "Which patient had the {extreme} {measure}{scope}?", "When was {measure} last measured for patient {pid}?",
    "What was patient {pid}'s {ordinal} {measure} value?", "How many patients received {drug}{scope}?",
    "How many times was {drug} given to patient {pid} {route}?", "Which drugs were given to patient {pid} {route}?",
    "List every {thing} recorded for patient {pid}.", "Has patient {pid} ever had a {measure} test?",
    "Did patient {pid} receive {drug} during the {ordinal} {stay}?", "What was the average {measure} of {sex} patients{scope}?",
    "How many {sex} patients were admitted{scope}?", "How many patients died in the hospital{scope}?",
    "What was the total cost of patient {pid}'s {ordinal} hospital stay?",
    "What was the total {io} of patient {pid} on the {ordinal} icu day?",
    "How many {tunit} passed between the {ordinal} admission and discharge of patient {pid}?",
    "When was patient {pid} {moved} for the {ordinal} time?", "Is patient {pid} still in the hospital?",
    "How many patients are currently in the icu?", "What was the weight of patient {pid} at admission?",
    "Which care units did patient {pid} pass through?", "What diagnoses were recorded for patient {pid} in {year}?",
    "Show the {n} most recent {measure} values of patient {pid}.", "What were the {n} most common {thing}s{scope}?",
    "Give me patient {pid}'s {measure} results from the {ordinal} {stay}.", "What is the gender of patient {pid}?",
    "What was patient {pid}'s {measure} before the {ordinal} dose of {drug}?", "Was {drug} stopped for patient {pid}?",
)
_BEDSIDE_SLOTS = {
    "oldest": ("oldest", "youngest"), "sex": ("male", "female", ""), "ordinal": ("first", "last", "most recent", "second", "latest"),
    "stay": ("hospital stay", "icu stay", "admission", "hospital visit"), "tunit": ("hours", "days", "minutes", "weeks"),
    "place": ("icu", "hospital"), "extreme": ("highest", "lowest", "largest", "smallest", "maximum", "minimum", "peak"),
    "route": ("by mouth", "intravenously", "orally", "subcutaneously", "iv", "through a feeding tube"),
    "thing": ("drug", "diagnosis", "procedure", "lab test", "culture", "prescription"),
    "io": ("urine output", "fluid intake", "fluid output"),
    "moved": ("admitted", "discharged", "transferred"), "n": ("3", "5", "two", "three", "ten"),
    "scope": ("", "", " in {year}", " this year", " in the icu", " admitted through the emergency department", " since {year}",
              " last month"),
}


# The ways the schemas identify whom or what a question is about: a patient by MIMIC's subject_id (eight digits) or
# eICU's uniquepid ("002-34851"); a visit by its own id, named after the id column that holds it (MIMIC's hadm_id: a
# hospital admission; stay_id: an ICU stay; eICU's patientunitstayid: a unit stay; patienthealthsystemstayid: a
# hospital stay). Read from the schemas' id columns, so that a question naming a visit by its number is not taken for
# one that points back at something it never names.
_VISITS = ("admission", "hospital admission", "hospital stay", "hospitalization", "icu stay", "ICU stay", "unit stay",
           "patient unit stay", "ICU unit stay", "encounter")


def _patient_id(rng: random.Random, mimic: bool) -> str:
    """A patient's id as a schema writes it: MIMIC's subject_id (eight digits) or eICU's uniquepid ("002-34851")."""
    return str(rng.randint(10000000, 19999999)) if mimic else f"{rng.randint(0, 999):03d}-{rng.randint(1, 99999)}"


def _subject(rng: random.Random) -> str:
    """Whom a point question is about: a patient by one of the schemas' patient ids, or a visit by its id."""
    draw = rng.random()
    if draw < 0.7:
        return f"patient {_patient_id(rng, mimic=draw < 0.5)}"
    return f"{rng.choice(_VISITS)} {rng.randint(100000, 39999999)}"


def _bedside_question(rng: random.Random) -> str:
    values = {k: rng.choice(v) for k, v in _BEDSIDE_SLOTS.items()}
    values.update(drug=rng.choice(_DRUGS), measure=rng.choice(_MEASURES))
    values["year"] = str(rng.randint(2100, 2105))
    values["scope"] = values["scope"].format(year=values["year"])
    form = rng.choice(_BEDSIDE_FORMS)
    if "{ordinal} {stay}" not in form and "{ordinal} hospital stay" not in form and "{ordinal} admission" not in form:
        form = form.replace("patient {pid}", "{subject}")  # a visit named by its id has no "first stay" of its own
        values["subject"] = _subject(rng)
    values["pid"] = _patient_id(rng, mimic=rng.random() < 0.7)
    return re.sub(r"\s{2,}", " ", form.format(**values))


def bedside_questions(seed: int = 0, n: int = 600) -> list[tuple[str, str]]:
    """Generated point questions in clinicians' plain wording: ``n`` answerable ones, and ``n / 4`` each with a vague
    word and with a reference to nothing, so that the wording alone does not read as answerable either."""
    rng = random.Random(seed + 104729)  # its own stream: the other generated questions stay as they were
    out = [(_bedside_question(rng), "answerable") for _ in range(n)]
    for _ in range(n // 4):
        out.append((_inject_vague(rng, _bedside_question(rng)), "vague-word"))
        q = _bedside_question(rng)
        referring = _inject_reference(rng, q)
        if referring != q:  # a question with nothing to point back at stays out rather than be mislabelled
            out.append((referring, "ambiguous-reference"))
    return out


# How clinicians write when they type fast: the scaffolding of a full question dropped ("last HR for 10021487"), the
# word "patient" before an id left out, the standard abbreviations of clinical English (HR, BP, K+, ICU, ED, meds, dx,
# avg, #), no question mark. Applied alike to every class of training question, so that terse wording is a style and
# not a sign of any class: a vague word or a reference to nothing stays what it was. General clinical usage (the
# abbreviations every medical dictionary lists), not a benchmark's questions.
_SCAFFOLDS = (
    (r"^(?:what|which) (?:is|was|were|are) (?:the )?", ""),
    (r"^(?:can|could|would) you (?:please )?(?:tell me|show me|give me|list|find|pull up|get|look up) (?:the )?", ""),
    (r"^(?:please )?(?:tell me|show me|give me|pull up|look up|get me) (?:the )?", ""),
    (r"^i (?:want|need|would like) (?:to know |to see )?(?:the )?", ""),
    (r"^how many ", "number of "),
    (r"^how many ", "# of "),
    (r"^what was the total ", "total "),
)
_ABBREVIATIONS = (
    ("systolic blood pressure", ("sbp", "SBP", "systolic")), ("diastolic blood pressure", ("dbp", "DBP", "diastolic")),
    ("mean arterial pressure", ("map", "MAP")), ("blood pressure", ("bp", "BP")), ("heart rate", ("hr", "HR", "pulse")),
    ("respiratory rate", ("rr", "RR", "resp rate")), ("temperature", ("temp",)), ("oxygen saturation", ("spo2", "SpO2", "o2 sat")),
    ("potassium", ("k", "K+", "K")), ("sodium", ("na", "Na")), ("chloride", ("cl",)), ("creatinine", ("cr", "creat")),
    ("hemoglobin", ("hgb", "hb")), ("white blood cell count", ("wbc", "WBC")), ("platelet count", ("plt", "platelets")),
    ("blood urea nitrogen", ("bun", "BUN")), ("glucose", ("blood sugar", "bg")), ("intensive care unit", ("icu", "ICU")),
    ("emergency department", ("ed", "ED", "er")), ("emergency room", ("er", "ER")), ("average", ("avg", "mean")),
    ("maximum", ("max",)), ("minimum", ("min",)), ("prescriptions", ("rx", "scripts")), ("prescription", ("rx",)),
    ("medications", ("meds",)), ("medication", ("med",)), ("diagnoses", ("dx", "dxs")), ("diagnosis", ("dx",)),
    ("procedures", ("procs",)), ("procedure", ("proc",)), ("history", ("hx",)), ("intravenously", ("iv", "IV")),
    ("intravenous", ("iv", "IV")), ("by mouth", ("po", "PO")), ("orally", ("po", "PO")), ("hospital admission", ("admit", "admission")),
    ("hospitalization", ("admission", "stay", "admit")), ("admissions", ("admits",)), ("admission", ("admit",)),
    ("discharged", ("d/c'd", "dc'd")), ("length of stay", ("los", "LOS")), ("lab tests", ("labs",)), ("lab test", ("lab",)),
    ("patients", ("pts",)), ("weight", ("wt",)), ("height", ("ht",)), ("milligrams", ("mg",)), ("milliliters", ("ml", "mL")),
    ("hours", ("hrs", "h")), ("minutes", ("mins",)), ("years", ("yrs",)), ("without", ("w/o",)), ("with", ("w/",)),
    ("urine output", ("uop", "UOP")), ("number", ("#", "no.")),
)
_ABBREVIATION = [(re.compile(rf"(?<![\w/#]){re.escape(long)}(?![\w/])", re.IGNORECASE), short) for long, short in _ABBREVIATIONS]
_PATIENT_BEFORE_ID = re.compile(r"\bpatient (?=(?:\d{3}-\d{3,7}|\d{5,9})\b)", re.IGNORECASE)


def _one_of(rng: random.Random, choices: tuple[str, ...], _match: re.Match[str]) -> str:
    return rng.choice(choices)


def shorthand(rng: random.Random, question: str) -> str:
    """The question as a clinician might type it in a hurry (see ``_SCAFFOLDS`` above); the same meaning."""
    q = question.strip()
    if rng.random() < 0.7:
        for scaffold, repl in rng.sample(_SCAFFOLDS, len(_SCAFFOLDS)):
            new = re.sub(scaffold, repl, q, count=1, flags=re.IGNORECASE)
            if new != q:
                q = new
                break
    for pattern, short in _ABBREVIATION:
        if rng.random() < 0.6:
            q = pattern.sub(partial(_one_of, rng, short), q)
    if rng.random() < 0.6:
        q = _PATIENT_BEFORE_ID.sub("", q)
    if rng.random() < 0.5:
        q = q.rstrip("?").rstrip()
    if rng.random() < 0.3:
        q = q.lower()
    return q[:1].upper() + q[1:] if q and rng.random() < 0.5 else q


def shorthand_questions(examples: list[tuple[str, str]], seed: int = 0, share: float = 0.25) -> list[tuple[str, str]]:
    """A terse copy (:func:`shorthand`) of about ``share`` of the training questions of every class, with its label."""
    rng = random.Random(seed + 7919)  # its own stream: the other generated questions stay as they were
    out = []
    for q, label in examples:
        if rng.random() < share:
            short = shorthand(rng, q)
            if short.lower() != q.lower():
                out.append((short, label))
    return out


def generated_questions(answerable: list[tuple[str, str]], seed: int = 0, per_class: int = 600) -> list[tuple[str, str]]:
    """Our own training questions: ``per_class`` for each of six non-answerable classes, about ``per_class / 2`` for
    the seventh (questions about the future and hospital operations: EHRSQL-2024's own unanswerable questions are its
    other half), and about
    ``per_class / 2`` answerable ones asking for attributes the schemas hold, in the missing-column forms.

    ``answerable`` holds (question, gold SQL) pairs; questions derived from one are masked with its SQL.
    """
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    for _ in range(per_class):
        q, sql = rng.choice(answerable)
        out.append((mask_values(_inject_vague(rng, q), sql), "vague-word"))
        q, sql = rng.choice(answerable)
        out.append((mask_values(_inject_reference(rng, q), sql), "ambiguous-reference"))
        out.append((_vague_question(rng), "vague-question"))
        out.append((_fill(rng, rng.choice(_SMALL_TALK)), "small-talk"))
        if rng.random() < 0.6:
            oos = f"{rng.choice(_OOS_VERBS)} {rng.choice(_OOS_MODELS)} {_fill(rng, rng.choice(_OOS_TASKS))}."
        else:
            oos = _fill(rng, rng.choice(_OOS_OTHER))
        out.append((oos, "out-of-scope"))
        if rng.random() < 0.6:
            missing = _fill(rng, rng.choice(_MISSING_FORMS)).format(attr=rng.choice(_MISSING_ATTRS))
        else:
            missing = _fill(rng, rng.choice(_EVENT_FORMS)).format(attr=rng.choice(_EVENT_ATTRS))
        out.append((missing, "missing-column"))
        if rng.random() < 0.5:
            out.append((_fill(rng, rng.choice(_INFEASIBLE)), "infeasible-faq"))
        if rng.random() < 0.5:
            out.append((_fill(rng, rng.choice(_MISSING_FORMS)).format(attr=rng.choice(_PRESENT_ATTRS)), "answerable"))
    return out


def ehrsql_questions(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Training examples from EHRSQL-2024: answerable, or (its unanswerable questions) infeasible-faq; masked with the gold SQL."""
    return [(mask_values(q, sql) if sql != "null" else q, "answerable" if sql != "null" else "infeasible-faq") for q, sql in pairs]


# How many MIMICSQL questions join the training data (``--mimicsql``): 400 beside EHRSQL's 5,124 keep most of what
# all of them teach about other wordings and lose less on SCARE (docs/safety.md).
MIMICSQL_SAMPLE = 400


def mimicsql_questions(paths: Iterable[str | Path], n: int = MIMICSQL_SAMPLE, seed: int = 0) -> list[tuple[str, str]]:
    """Answerable training examples from MIMICSQL files (one JSON object per line: ``question_refine``, ``sql``), masked
    with their SQL: a seeded sample of ``n`` distinct wordings. People ask these in other words than EHRSQL's ("what is
    the number of patients whose ..."), about the same kinds of record. A question that carries a cue of the lexicon is
    left out: its schema's field names ("short title", "long title", the "abnormal" flag) would teach that vague words
    are answerable."""
    seen: dict[str, tuple[str, str]] = {}
    for p in paths:
        for line in Path(p).read_text().splitlines():
            if line.strip():
                item = json.loads(line)
                # MIMICSQL writes values in double quotes (``DRUG = "Heparin"``), which SQL reads as names
                sql = re.sub(r'(=|\blike|>|<)\s*"([^"]*)"', r"\1 '\2'", item["sql"], flags=re.I)
                masked = mask_values(item["question_refine"], sql)
                cues = question_cues(masked)
                if not (cues.vague or cues.references or cues.out_of_scope or cues.small_talk or cues.infeasible or cues.missing):
                    seen.setdefault(masked.lower(), (masked, "answerable"))
    examples = sorted(seen.values())
    return random.Random(seed).sample(examples, n) if len(examples) > n else examples


def scare_questions(paths: Iterable[str | Path]) -> list[tuple[str, str, str]]:
    """(masked question, class, question) for each distinct (question, candidate SQL) of SCARE files."""
    seen: dict[str, tuple[str, str, str]] = {}
    for p in paths:
        for it in json.loads(Path(p).read_text()):
            cls = "answerable" if it["type"] in ANSWERABLE_TYPES else it["type"]
            masked = mask_values(it["question"], it["pred_sql"])
            seen.setdefault(masked, (masked, cls, it["question"]))
    return list(seen.values())


# The safety cases a question model may learn from (``--with-safety``): ours, and the halves of the blind sets that were
# read to write rules (``benchmarks/safety_heldout/README.md``). Never the unread halves: they measure what this learns.
_BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SAFETY_TRAINING_FILES = (*sorted((_BENCHMARKS / "safety_data").glob("*.jsonl")),
                         *(_BENCHMARKS / "safety_heldout" / f"{name}.jsonl"
                           for name in ("read", "second_read", "third_read", "fourth_read", "fifth_read")))
# How many times each of them counts: a few hundred questions in clinicians' own words beside thousands of templated
# ones, weighed up so that their wording is heard. Set once before measuring, not tuned (tuning it on the unread halves
# would make them no longer held out).
SAFETY_REPEAT = 3


def safety_subtype(kind: str, category: str) -> str | None:
    """The question classifier's class for a safety case, or None when the case says nothing about the question's
    wording: an answer that is wrong for its SQL's sake, a patient or a write the records refuse, or a field only one
    database lacks (an allergy is in eICU, not in MIMIC-IV: the question model reads no schema). Read from the case's
    kind and category (its own words: "vague-threshold", "future-event", "family-history")."""
    if kind in ("correct", "wrong"):
        return "answerable"
    c = category.lower()
    if kind == "ambiguous":
        if re.search(r"underspecified", c):
            return "vague-question"
        if re.search(r"reference|which-", c):
            return "ambiguous-reference"
        return "vague-word"
    if kind != "unanswerable" or c.endswith("-absent") or re.search(r"patient|write", c):
        return None
    if re.search(r"future|advice|opinion", c):
        return "infeasible-faq"
    if re.search(r"non-database|translat|small-talk", c):
        return "out-of-scope"
    return "missing-column"


def safety_questions(paths: Iterable[str | Path], repeat: int = SAFETY_REPEAT) -> list[tuple[str, str]]:
    """Training examples from safety case files (``benchmarks/safety_data/README.md``'s format), masked with the case's
    SQL (the gold where there is one), each ``repeat`` times; cases whose class says nothing of the wording are left
    out (:func:`safety_subtype`)."""
    out: list[tuple[str, str]] = []
    for p in paths:
        for line in Path(p).read_text().splitlines():
            if not line.strip():
                continue
            case = json.loads(line)
            cls = safety_subtype(case["kind"], case.get("category", ""))
            if cls is not None:
                out += [(mask_values(case["question"], case.get("gold_sql") or case.get("candidate_sql") or ""), cls)] * repeat
    return out


def _class_weights(y: np.ndarray) -> np.ndarray:
    counts = np.bincount(y, minlength=len(CLASSES)).astype(np.float32)
    return np.where(counts > 0, counts.sum() / np.maximum(counts, 1) / len(CLASSES), 0.0).astype(np.float32)


def train_model(examples: list[tuple[str, str]], embedder: Embedder | None, cache: dict[str, np.ndarray] | None = None,
                **kw: Any) -> QuestionModel:
    questions = [q for q, _ in examples]
    y = np.array([CLASSES.index(c) for _, c in examples])
    emb = embed_cached(questions, embedder, cache) if embedder else None
    x = featurize(questions, emb)
    return train_softmax(x, y, class_weight=_class_weights(y), uses_embeddings=embedder is not None, **kw)


def embed_cached(questions: list[str], embedder: Embedder, cache: dict[str, np.ndarray] | None) -> np.ndarray:
    cache = {} if cache is None else cache
    todo = sorted({q for q in questions if q not in cache})
    if todo:
        for q, v in zip(todo, embedder.embed(todo), strict=False):
            cache[q] = v
    return np.stack([cache[q] for q in questions])


def parse_fold(text: str) -> tuple[int, int]:
    """``"2/5"`` -> (2, 5); folds are numbered 0..K-1."""
    from ehrguard.errors import ConfigError

    try:
        fold, k = (int(x) for x in text.split("/"))
    except ValueError:
        raise ConfigError(f"A fold is I/K with 0 <= I < K, e.g. 0/5; got {text!r}.") from None
    if not 0 <= fold < k:
        raise ConfigError(f"A fold is I/K with 0 <= I < K, e.g. 0/5; got {text!r}.")
    return fold, k


def fold_of(question: str, k: int) -> int:
    """A stable fold for a question text (grouped CV: all copies of a question share a fold)."""
    return zlib.crc32(question.strip().lower().encode()) % k


def cross_validate(scare: list[tuple[str, str, str]], base: list[tuple[str, str]], embedder: Embedder | None,
                   cache: dict[str, np.ndarray], k: int = 5) -> dict[str, np.ndarray]:
    """Out-of-fold class probabilities for every SCARE (masked) question; folds group by the original question."""
    from ehrguard.verify.offline.classifier import featurize

    out: dict[str, np.ndarray] = {}
    for fold in range(k):
        train = base + [(m, c) for m, c, q in scare if fold_of(q, k) != fold]
        test = [m for m, _, q in scare if fold_of(q, k) == fold]
        if not test:
            continue
        model = train_model(train, embedder, cache)
        x = featurize(test, embed_cached(test, embedder, cache) if embedder else None)
        for m, row in zip(test, model.probabilities(x), strict=True):
            out[m] = row
    return out
