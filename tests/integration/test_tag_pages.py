"""Tag pages (issue 21, item 3, in part): through a real worker (prefork) and Redis, on
the run's database, each tag a live article carries has a page and an Atom feed
(tag/<slug>/), written by the refresher for the tags a publish or a delete touched; a
re-tag takes the article off the old tag's page, and a tag left with no article has
its folder removed."""

from __future__ import annotations

import pytest
from django.conf import settings

from blogpublish.site import StaticSitePublisher
from publishing.models import Article, ArticleStatus, ArticleTag, Tag, TagRefresh
from publishing.reader_fields import tag_slug
from tests.support.settling import wait_settled
from tests.support.site import run_full_check
from tests.support.site import tagged as site_tagged
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def site(worker):
    run_full_check(StaticSitePublisher())
    return settings.SITE_ROOT


def tag_folder(name: str, kind: str = "tag"):
    return settings.SITE_ROOT / kind / tag_slug(name)


def tagged(name: str, kind: str = "tag") -> list[str] | None:
    return site_tagged(settings.SITE_ROOT, name, kind)


def live(article: Article) -> Article:
    wait_for(
        lambda: Article.objects.filter(
            pk=article.pk, status=ArticleStatus.PUBLISHED, published_hash=article.content_hash
        ).exists(),
        timeout=30,
        what=f"article {article.pk} live",
    )
    return article


def test_tag_pages_follow_publishes_retags_and_deletes(site, make_article):
    first = live(make_article(slug="tag-first", tags=["Python", "数据库"]))
    second = live(make_article(slug="tag-second", tags=["python"]))  # the same tag
    wait_settled()

    assert tagged("Python") == ["tag-second", "tag-first"]
    assert tagged("数据库") == ["tag-first"]
    page = (site / "tag-first" / "index.html").read_text(encoding="utf-8")
    assert f'rel="tag" href="/tag/{tag_slug("Python")}/">Python</a>' in page
    front = (site / "index.html").read_text(encoding="utf-8")
    assert f'<a rel="tag" href="/tag/{tag_slug("Python")}/">python</a>' in front

    first.tags = ["web"]  # a re-tag: off the old tags' pages, onto the new one's
    first.save()
    live(first)
    wait_settled()

    assert tagged("Python") == ["tag-second"]
    assert tagged("数据库") is None and not tag_folder("数据库").exists()
    assert tagged("web") == ["tag-first"]

    second.delete()
    wait_settled()

    assert tagged("Python") is None
    assert not TagRefresh.objects.exists()  # every request was taken


def test_spellings_of_one_tag_share_its_page_and_a_hash_like_name_has_its_own(site, make_article):
    """ "Machine learning" and "machine-learning" are one tag (reader_fields.tag_key): one
    page lists both articles. A tag named as the folder of "c++" is another tag, with a
    folder of its own: neither page is written over by the other's."""
    live(make_article(slug="ml-spaced", tags=["Machine learning", "c++"]))
    live(make_article(slug="ml-hyphened", tags=["machine-learning", tag_slug("c++")]))
    wait_settled()

    assert tagged("machine learning") == ["ml-hyphened", "ml-spaced"]
    assert tag_folder("Machine learning") == tag_folder("machine-learning")
    assert tagged("c++") == ["ml-spaced"]
    assert tagged(tag_slug("c++")) == ["ml-hyphened"]


def test_the_full_check_repairs_what_an_earlier_release_left_in_the_tags_index(site, make_article):
    """A release before migration 0026, still running beside it (a rolling deploy),
    makes a tag's row by its own key, and a completion of it that read a tag's id as
    the migration merged that tag away leaves its article's row naming no tag: the full
    check brings both back (services.live_tags.live_tags_heal), and the tag's page
    lists every article again."""
    first = live(make_article(slug="heal-first", tags=["Deep learning"]))
    second = live(make_article(slug="heal-second", tags=["deep-learning", "other"]))
    wait_settled()
    tag = Tag.objects.get(key="deep-learning")
    # The old release's row (its key kept the space; the same folder) took the first's.
    old = Tag.objects.create(
        kind="tag", key="deep learning", name="Deep learning", slug="deep-learning"
    )
    ArticleTag.objects.filter(article=first, tag=tag).update(tag=old)
    # And the second's row names a tag merged away meanwhile.
    ArticleTag.objects.filter(article=second, tag=tag).update(tag_id=old.pk + 1000)

    run_full_check(StaticSitePublisher())
    wait_settled()

    assert list(Tag.objects.filter(slug="deep-learning").values_list("pk", flat=True)) == [tag.pk]
    assert set(ArticleTag.objects.filter(tag=tag).values_list("article__slug", flat=True)) == {
        "heal-first",
        "heal-second",
    }
    assert not ArticleTag.objects.exclude(tag_id__in=Tag.objects.values("pk")).exists()
    assert tagged("deep learning") == ["heal-second", "heal-first"]


def test_a_tag_is_named_as_its_newest_article_spells_it(site, make_article):
    """ "Javascript" first, then a newer article says "JavaScript": the tag's page, its
    feed and the tags' list (API, desk) say it the new way; the older article's page
    keeps its own spelling. A byline the same."""
    first = live(make_article(slug="js-old", tags=["Javascript"], byline="ann lee"))
    wait_settled()
    live(make_article(slug="js-new", tags=["JavaScript"], byline="Ann Lee"))
    wait_settled()

    page = (tag_folder("javascript") / "index.html").read_text(encoding="utf-8")
    assert '<span class="meta">JavaScript</span>' in page and "Javascript" not in page
    feed = (tag_folder("javascript") / "feed.xml").read_text(encoding="utf-8")
    assert "JavaScript" in feed and "Javascript" not in feed.split("<entry>")[0]
    author = (tag_folder("Ann Lee", "author") / "index.html").read_text(encoding="utf-8")
    assert '<span class="meta">Ann Lee</span>' in author
    assert set(Tag.objects.values_list("kind", "name")) == {
        ("tag", "JavaScript"),
        ("author", "Ann Lee"),
    }
    old_page = (site / "js-old" / "index.html").read_text(encoding="utf-8")
    assert ">Javascript</a>" in old_page  # its own spelling, as its writer left it
    assert Article.objects.get(pk=first.pk).tags == ["Javascript"]  # never rewritten


def test_the_full_check_writes_a_lost_tag_page_and_removes_a_stray_one(site, make_article):
    live(make_article(slug="tag-kept", tags=["kept"]))
    wait_settled()
    lost = tag_folder("kept") / "index.html"
    lost.unlink()
    stray = settings.SITE_ROOT / "tag" / "no-such-tag"
    stray.mkdir(parents=True)
    (stray / "index.html").write_text("old", encoding="utf-8")

    run_full_check(StaticSitePublisher())

    assert tagged("kept") == ["tag-kept"]
    assert not stray.exists()


def test_author_pages_follow_bylines(site, make_article):
    """A byline's page (author/<slug>/) and feed, as a tag's: a new byline moves the
    article to the new name's page, and an author left with none loses the folder."""
    ann = live(make_article(slug="by-ann", byline="Ann Writer"))
    live(make_article(slug="by-ann-too", byline="ann writer"))  # one author, two spellings
    wait_settled()

    assert tagged("Ann Writer", "author") == ["by-ann-too", "by-ann"]
    page = (site / "by-ann" / "index.html").read_text(encoding="utf-8")
    assert 'rel="author" href="/author/ann-writer/">Ann Writer</a>' in page

    ann.byline = "王小明"
    ann.save()
    live(ann)
    wait_settled()

    assert tagged("Ann Writer", "author") == ["by-ann-too"]
    assert tagged("王小明", "author") == ["by-ann"]
    assert tagged("Ann Writer") is None  # a byline is not a tag


def test_the_longest_chinese_tag_and_byline_have_pages_and_lose_them_with_their_article(
    site, make_article
):
    """A tag of 100 Chinese characters is 300 bytes of UTF-8, a byline of 200 is 600: as
    folder names (255 bytes at most, and more once moved aside to be removed) every
    refresh failed on them, and no other tag's page was written again (a review's
    reproduction). Their folders are cut to an article slug's bytes, with the hash."""
    tag, byline = "数" * 100, "王" * 200
    article = live(make_article(slug="long-names", tags=[tag], byline=byline))
    wait_settled()

    assert tagged(tag) == ["long-names"]
    assert tagged(byline, "author") == ["long-names"]
    article.delete()
    live(make_article(slug="after-long", tags=["after"]))
    wait_settled()

    assert not tag_folder(tag).exists() and not tag_folder(byline, "author").exists()
    assert tagged("after") == ["after-long"]
