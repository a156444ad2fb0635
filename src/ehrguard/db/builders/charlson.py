"""``mimiciv_derived.charlson``: the Charlson comorbidity index per hospital admission.

Our own SQL from the published definition: Charlson et al. (1987) weights with the ICD-9-CM
and ICD-10 coding algorithms of Quan et al. (Med Care 2005), the hierarchy rules (a severe
form replaces the mild one: liver disease, diabetes, cancer vs metastasis) and an age score
(<= 50: 0, 51-60: 1, 61-70: 2, 71-80: 3, > 80: 4) from the age at admission. MIMIC-IV stores
ICD codes without dots, so every code below is a dotless prefix.
"""

from __future__ import annotations

# name: (weight, ICD-9 prefixes, ICD-10 prefixes)
CONDITIONS: dict[str, tuple[int, tuple[str, ...], tuple[str, ...]]] = {
    "myocardial_infarct": (1, ("410", "412"), ("I21", "I22", "I252")),
    "congestive_heart_failure": (1, ("39891", "40201", "40211", "40291", "40401", "40403", "40411", "40413", "40491", "40493",
                                     "4254", "4255", "4256", "4257", "4258", "4259", "428"),
                                 ("I099", "I110", "I130", "I132", "I255", "I420", "I425", "I426", "I427", "I428", "I429", "I43", "I50",
                                  "P290")),
    "peripheral_vascular_disease": (1, ("0930", "4373", "440", "441", "4431", "4432", "4433", "4434", "4435", "4436", "4437", "4438",
                                        "4439", "4471", "5571", "5579", "V434"),
                                    ("I70", "I71", "I731", "I738", "I739", "I771", "I790", "I792", "K551", "K558", "K559", "Z958", "Z959")),
    "cerebrovascular_disease": (1, ("36234", "430", "431", "432", "433", "434", "435", "436", "437", "438"),
                                ("G45", "G46", "H340", "I60", "I61", "I62", "I63", "I64", "I65", "I66", "I67", "I68", "I69")),
    "dementia": (1, ("290", "2941", "3312"), ("F00", "F01", "F02", "F03", "F051", "G30", "G311")),
    "chronic_pulmonary_disease": (1, ("4168", "4169", "490", "491", "492", "493", "494", "495", "496", "497", "498", "499", "500", "501",
                                      "502", "503", "504", "505", "5064", "5081", "5088"),
                                  ("I278", "I279", "J40", "J41", "J42", "J43", "J44", "J45", "J46", "J47", "J60", "J61", "J62", "J63",
                                   "J64", "J65", "J66", "J67", "J684", "J701", "J703")),
    "rheumatic_disease": (1, ("4465", "7100", "7101", "7102", "7103", "7104", "7140", "7141", "7142", "7148", "725"),
                          ("M05", "M06", "M315", "M32", "M33", "M34", "M351", "M353", "M360")),
    "peptic_ulcer_disease": (1, ("531", "532", "533", "534"), ("K25", "K26", "K27", "K28")),
    "mild_liver_disease": (1, ("07022", "07023", "07032", "07033", "07044", "07054", "0706", "0709", "570", "571", "5733", "5734", "5738",
                               "5739", "V427"),
                           ("B18", "K700", "K701", "K702", "K703", "K709", "K713", "K714", "K715", "K717", "K73", "K74", "K760", "K762",
                            "K763", "K764", "K768", "K769", "Z944")),
    "diabetes_without_cc": (1, ("2500", "2501", "2502", "2503", "2508", "2509"),
                            tuple(f"E1{t}{s}" for t in "01234" for s in "01689")),
    "diabetes_with_cc": (2, ("2504", "2505", "2506", "2507"), tuple(f"E1{t}{s}" for t in "01234" for s in "23457")),
    "paraplegia": (2, ("3341", "342", "343", "3440", "3441", "3442", "3443", "3444", "3445", "3446", "3449"),
                   ("G041", "G114", "G801", "G802", "G81", "G82", "G830", "G831", "G832", "G833", "G834", "G839")),
    "renal_disease": (2, ("40301", "40311", "40391", "40402", "40403", "40412", "40413", "40492", "40493", "582", "5830", "5831", "5832",
                          "5833", "5834", "5835", "5836", "5837", "585", "586", "5880", "V420", "V451", "V56"),
                      ("I120", "I131", "N032", "N033", "N034", "N035", "N036", "N037", "N052", "N053", "N054", "N055", "N056", "N057",
                       "N18", "N19", "N250", "Z490", "Z491", "Z492", "Z940", "Z992")),
    "malignant_cancer": (2, tuple(str(c) for c in range(140, 173)) + tuple(str(c) for c in range(174, 195))
                         + ("1950", "1951", "1952", "1953", "1954", "1955", "1958")
                         + tuple(str(c) for c in range(200, 209)) + ("2386",),
                         tuple(f"C{c:02d}" for c in list(range(27)) + list(range(30, 35)) + list(range(37, 42)) + [43]
                               + list(range(45, 59)) + list(range(60, 77)) + list(range(81, 86)) + [88] + list(range(90, 98)))),
    "severe_liver_disease": (3, ("4560", "4561", "4562", "5722", "5723", "5724", "5725", "5726", "5727", "5728"),
                             ("I850", "I859", "I864", "I982", "K704", "K711", "K721", "K729", "K765", "K766", "K767")),
    "metastatic_solid_tumor": (6, ("196", "197", "198", "199"), ("C77", "C78", "C79", "C80")),
    "aids": (6, ("042", "043", "044"), ("B20", "B21", "B22", "B24")),
}


def _flag(name: str) -> str:
    _, icd9, icd10 = CONDITIONS[name]
    nine = " OR ".join(f"icd_code LIKE '{p}%'" for p in icd9)
    ten = " OR ".join(f"icd_code LIKE '{p}%'" for p in icd10)
    return f"MAX(CASE WHEN (icd_version = 9 AND ({nine})) OR (icd_version = 10 AND ({ten})) THEN 1 ELSE 0 END) AS {name}"


def charlson_sql() -> str:
    """CREATE TABLE mimiciv_derived.charlson over mimiciv_hosp.admissions / patients / diagnoses_icd."""
    flags = ",\n    ".join(_flag(n) for n in CONDITIONS)
    plain = [n for n in CONDITIONS if n not in ("mild_liver_disease", "severe_liver_disease", "diabetes_without_cc", "diabetes_with_cc",
                                                  "malignant_cancer", "metastatic_solid_tumor")]
    return f"""
CREATE TABLE mimiciv_derived.charlson AS
WITH diag AS (
  SELECT hadm_id,
    {flags}
  FROM mimiciv_hosp.diagnoses_icd
  GROUP BY hadm_id
), ages AS (
  SELECT a.subject_id, a.hadm_id,
         p.anchor_age + (EXTRACT(year FROM CAST(a.admittime AS TIMESTAMP)) - p.anchor_year) AS age
  FROM mimiciv_hosp.admissions a JOIN mimiciv_hosp.patients p ON a.subject_id = p.subject_id
)
SELECT ages.subject_id, ages.hadm_id,
  CASE WHEN ages.age <= 50 THEN 0 WHEN ages.age <= 60 THEN 1 WHEN ages.age <= 70 THEN 2 WHEN ages.age <= 80 THEN 3 ELSE 4 END AS age_score,
  {", ".join(f"COALESCE(d.{n}, 0) AS {n}" for n in CONDITIONS)},
  CASE WHEN ages.age <= 50 THEN 0 WHEN ages.age <= 60 THEN 1 WHEN ages.age <= 70 THEN 2 WHEN ages.age <= 80 THEN 3 ELSE 4 END
  + {" + ".join(f"COALESCE({CONDITIONS[n][0]} * d.{n}, 0)" for n in plain)}
  + GREATEST(COALESCE(d.mild_liver_disease, 0), 3 * COALESCE(d.severe_liver_disease, 0))
  + GREATEST(2 * COALESCE(d.diabetes_with_cc, 0), COALESCE(d.diabetes_without_cc, 0))
  + GREATEST(2 * COALESCE(d.malignant_cancer, 0), 6 * COALESCE(d.metastatic_solid_tumor, 0))
  AS charlson_comorbidity_index
FROM ages LEFT JOIN diag d ON ages.hadm_id = d.hadm_id
"""
