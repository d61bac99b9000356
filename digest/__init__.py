"""The editors' daily digest: what it says (content), how it travels (delivery), and
once per day whatever fires it (days)."""
