"""The REST API and the web app (``ehrguard serve``)."""
