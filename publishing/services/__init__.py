"""Services: every state change of the pipeline, as plain typed functions.

`publish` is the one publish path (claim a group, publish, complete or fail each row,
let go what it could not try): a single article is a group of one; `operator`
what a person does (requeue, publish now); `site` deletes and the full check of the
targets; `deliveries` the webhook outbox (its deliveries, after the publish);
`catch_up` the safety net that finds work the event path missed; `alarms` the
dead-letter and stuck alerts; `refresh` the coalescing refresher of the shared views;
`authoring` what a writer does (create, edit), which every way in goes through;
`stories` the writer's drafts (save, publish, withdraw) beside the pipeline.
Callers import from here.
"""

from publishing.services.alarms import article_dead_alert, stuck_check
from publishing.services.authoring import (
    article_create,
    article_update,
    articles_create_many,
)
from publishing.services.catch_up import CatchUpReport, catch_up, publish_pending
from publishing.services.deliveries import (
    DeliveryOutcome,
    DeliveryResult,
    NewDelivery,
    deliveries_deliver_due,
    deliveries_enqueue,
    delivery_not_requeued_why,
    delivery_requeue,
    webhook_deliver,
)
from publishing.services.operator import article_publish_now, article_requeue, articles_requeue
from publishing.services.publish import (
    AttemptResult,
    Claim,
    GroupReport,
    Outcome,
    article_claim,
    article_complete,
    article_fail,
    article_publish,
    claim_group,
    complete,
    explain_unclaimed,
    leased_by,
    mark_sent,
    publish_group,
    suspects_due,
)
from publishing.services.refresh import (
    shared_views_deferred,
    shared_views_lease_held_until,
    shared_views_pass,
    shared_views_request,
    shared_views_whole,
)
from publishing.services.site import (
    UNPUBLISH_FIELDS,
    article_forget,
    article_unpublish,
    site_reconcile,
    unpublish_snapshot,
)
from publishing.services.stories import (
    DIFF_MAX_LINES,
    article_to_trash,
    body_lines,
    diff_too_large,
    revision_diff,
    stories_purge,
    stories_tidy,
    story_by_preview_token,
    story_delete,
    story_of_article,
    story_preview_token,
    story_publish,
    story_restore,
    story_save,
    story_share,
    story_trash,
    story_undated_date,
    story_unshare,
    story_untrash,
    story_withdraw,
)

__all__ = [
    "DIFF_MAX_LINES",
    "UNPUBLISH_FIELDS",
    "AttemptResult",
    "CatchUpReport",
    "Claim",
    "DeliveryOutcome",
    "DeliveryResult",
    "GroupReport",
    "NewDelivery",
    "Outcome",
    "article_claim",
    "article_complete",
    "article_create",
    "article_dead_alert",
    "article_fail",
    "article_forget",
    "article_publish",
    "article_publish_now",
    "article_requeue",
    "article_to_trash",
    "article_unpublish",
    "article_update",
    "articles_create_many",
    "articles_requeue",
    "body_lines",
    "catch_up",
    "claim_group",
    "complete",
    "deliveries_deliver_due",
    "deliveries_enqueue",
    "delivery_not_requeued_why",
    "delivery_requeue",
    "diff_too_large",
    "explain_unclaimed",
    "leased_by",
    "mark_sent",
    "publish_group",
    "publish_pending",
    "revision_diff",
    "shared_views_deferred",
    "shared_views_lease_held_until",
    "shared_views_pass",
    "shared_views_request",
    "shared_views_whole",
    "site_reconcile",
    "stories_purge",
    "stories_tidy",
    "story_by_preview_token",
    "story_delete",
    "story_of_article",
    "story_preview_token",
    "story_publish",
    "story_restore",
    "story_save",
    "story_share",
    "story_trash",
    "story_undated_date",
    "story_unshare",
    "story_untrash",
    "story_withdraw",
    "stuck_check",
    "suspects_due",
    "unpublish_snapshot",
    "webhook_deliver",
]
