"""Live tools of the Lieferservice agent, found next to the suite (``function: lieferservice_tools:...``).

They run only with ``--live``. ``feiertage_abfragen`` returns a JSON *string*, as many real tool wrappers do:
the agent must get exactly that text, not the text encoded once more.
"""

from __future__ import annotations

import json


def feiertage_abfragen(jahr: int, bundesland: str) -> str:
    """Holidays around Christmas, as a JSON string."""
    return json.dumps({"jahr": jahr, "bundesland": bundesland, "feiertage": [f"{jahr}-12-24", f"{jahr}-12-25"]})


def lager_pruefen(plz: str) -> dict[str, object]:
    """Stock for a postcode, as a mapping (Simulator serialises it once)."""
    return {"plz": plz, "vorraetig": True, "menge": 12}


def tarif_abfragen(art: str) -> dict[str, object]:
    """The tariff server is down: the tool raises."""
    raise RuntimeError(f"Tarifserver nicht erreichbar ({art})")


def express_buchen(plz: str) -> dict[str, object]:
    """Never runs in these tests: the tool requires approval."""
    raise AssertionError("express_buchen must not run without a person's approval")
