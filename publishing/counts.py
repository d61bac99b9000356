"""The article counts the database keeps (ArticleCount, by triggers: migration 0010).

They need no help in operation. `article_counts_repair` recounts once when they cannot
be right: a status below zero, or no counts while articles exist. That happens only when
the two tables were emptied in the wrong order (Django's `flush`, which test runs use
between tests, deletes the counts before the articles on SQLite, and the articles'
delete triggers then count below zero); it runs after every `migrate` and `flush`
(post_migrate) and costs a query of a few rows when there is nothing to repair.
"""

from __future__ import annotations

from django.db import connections, transaction
from django.db.models import Sum

from publishing.models import Article, ArticleCount


def article_counts_repair(*, using: str = "default") -> bool:
    """Recount when the kept counts are impossible; True if it recounted."""
    sums = ArticleCount.objects.using(using).values("status").annotate(total=Sum("n")).order_by()
    totals = [row["total"] or 0 for row in sums]
    broken = any(total < 0 for total in totals)
    if not broken and not any(totals):
        broken = Article.objects.using(using).exists()
    if not broken:
        return False
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        cursor.execute("DELETE FROM publishing_articlecount")
        cursor.execute(
            "INSERT INTO publishing_articlecount (status, shard, n) "
            "SELECT status, 0, COUNT(*) FROM publishing_article GROUP BY status"
        )
    return True


def repair_after_migrate(sender, using: str = "default", **kwargs) -> None:
    """post_migrate (sent after `migrate` and after `flush`)."""
    connection = connections[using]
    if ArticleCount._meta.db_table not in connection.introspection.table_names():
        return  # migrated back to before the counts
    article_counts_repair(using=using)
