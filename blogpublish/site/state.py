"""The site's own small notebook, SITE_ROOT/.site-state.json, read and written under the lock.

- `count`: how many articles the archive was last built for. A refresh adds the newly
  listed articles to it instead of counting the table, so its cost does not grow with
  the site; a full rebuild (after a delete, from reconcile, or when the file is missing
  or unreadable) counts again.
- `written`: pages written by `publish` whose attempt has not settled yet, by article
  id. The refresh after the outcome finds here which archive entries changed and which
  directories became stale (the old slug after a slug edit, the page of an attempt
  whose article was deleted meanwhile). Bounded by the attempts in flight.
- `rebuild`: set by a delete of a listed article; every position above it moved down.

Losing this file loses nothing: the next refresh rebuilds from the database, and
reconcile removes whatever directory no article needs.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

from blogpublish.files import atomic_write
from blogpublish.site.paths import STATE_FILE

logger = logging.getLogger(__name__)


@dataclass
class Written:
    content_hash: str
    # Every directory written for it since it last settled, and the live one it replaces.
    slugs: list[str]
    # Listed before these writes: settling it then does not add to the count.
    was_listed: bool
    # Its listed date then (ISO): a new date moves it in the archive, so settling
    # such an article rebuilds instead of rewriting one page.
    listed_at: str = ""


@dataclass
class SiteState:
    count: int = 0
    rebuild: bool = True
    written: dict[int, Written] = field(default_factory=dict)

    @classmethod
    def load(cls, root: Path) -> SiteState:
        try:
            raw = json.loads((root / STATE_FILE).read_text(encoding="utf-8"))
            return cls(
                count=int(raw["count"]),
                rebuild=bool(raw["rebuild"]),
                written={int(k): Written(**v) for k, v in raw["written"].items()},
            )
        except FileNotFoundError:
            return cls()
        except (ValueError, KeyError, TypeError) as exc:
            logger.warning("%s is unreadable (%s); the site is rebuilt", STATE_FILE, exc)
            return cls()

    def save(self, root: Path) -> None:
        raw = {
            "count": self.count,
            "rebuild": self.rebuild,
            "written": {str(k): asdict(v) for k, v in self.written.items()},
        }
        atomic_write(root / STATE_FILE, json.dumps(raw, ensure_ascii=False, sort_keys=True))

    def note_write(
        self,
        *,
        article_id: int,
        content_hash: str,
        slugs: list[str],
        listed: bool,
        listed_at: str = "",
    ) -> None:
        entry = self.written.get(article_id)
        if entry is None:
            self.written[article_id] = Written(content_hash, sorted(set(slugs)), listed, listed_at)
            return
        # was_listed stays what it was at the first unsettled write.
        entry.content_hash = content_hash
        entry.slugs = sorted(set(entry.slugs) | set(slugs))
