"""The writer's desk in the admin (issue 12): preview, images, the article's life.

Preview and refusals need no worker; the publish paths run with the real worker,
Redis and database."""

from __future__ import annotations

import hashlib
import html
import io
import re
import threading
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.forms.models import model_to_dict
from django.test import Client
from django.utils import timezone
from PIL import Image as Pil

from blogpublish.desk import images
from blogpublish.models import Image, PageNote
from blogpublish.site import documents
from blogpublish.site.figures import SIZES
from publishing.models import Article, ArticleStatus, PublishAttempt, Story
from publishing.services import story_save
from tests.support.desk import article_form, image_bytes
from tests.support.live_tags import listed_with_tags
from tests.support.site import without_json_ld
from tests.support.waiting import wait_for, wait_status

PREVIEW = "/admin/publishing/article/preview/"
IMAGE = "/admin/publishing/article/image/"
HOSTILE = (
    "# Heading\n\nSome **bold** text.\n\n<script>alert('x')</script>\n\n"
    '<img src="x.png" onerror="alert(1)"> [link](javascript:alert(1))'
)


def everything() -> dict:
    """Every row the pipeline and the site keep, as values."""
    return {
        "articles": [
            model_to_dict(a) | {"updated_at": a.updated_at} for a in Article.objects.all()
        ],
        "attempts": list(PublishAttempt.objects.values()),
        "notes": list(PageNote.objects.values()),
        "images": list(Image.objects.values()),
    }


# --- preview -------------------------------------------------------------------------


@pytest.mark.django_db
def test_preview__renders_the_sanitised_page_and_changes_nothing(admin_client, sent_tasks):
    article = Article(title="Saved title", slug="saved", body="Saved body.")
    article.save()
    before = everything()

    response = admin_client.post(
        PREVIEW,
        {
            "title": "Unsaved <title>",
            "slug": "saved",
            "body": HOSTILE,
            "publish_at_0": "2026-12-01",
            "publish_at_1": "09:30:00",
        },
    )

    assert response.status_code == 200
    answer = response.json()
    html = answer["html"]
    assert answer["problems"] == []
    assert "<h1>Unsaved &lt;title&gt;</h1>" in html
    assert "<strong>bold</strong>" in html
    assert "<h1>Heading</h1>" in html
    assert '<img src="x.png" alt="" loading="lazy" decoding="async">' in html
    for removed in ("<script", "onerror", "javascript:"):
        assert removed not in without_json_ld(html)
    assert 'http-equiv="Content-Security-Policy"' in html
    assert "script-src &#x27;none&#x27;" in html
    assert everything() == before
    assert sent_tasks == []  # nothing sent to be published
    assert not (settings.SITE_ROOT / "saved").exists()


@pytest.mark.django_db
def test_preview__is_the_page_the_site_writes(admin_client):
    when = timezone.now().replace(microsecond=0)
    form = article_form(title="Same page", slug="same-page", body=HOSTILE, when=when)

    html = admin_client.post(PREVIEW, form).json()["html"]

    page = documents.article_page(
        Article(title="Same page", slug="same-page", body=HOSTILE, publish_at=when)
    )
    assert re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>\n', "", html) == page


@pytest.mark.django_db
def test_preview__shows_the_reader_fields_as_the_page_will(admin_client):
    """The byline, tags, description and language are on the page readers get, so on
    the preview too (they were left out: a review's finding)."""
    when = timezone.now().replace(microsecond=0)
    fields = {"byline": "王小明", "tags": "Python, 数据库", "description": "Short."}
    fields["language"] = "zh-Hans"
    form = article_form(title="Same page", slug="same-page", body="Text.", when=when) | fields

    html = admin_client.post(PREVIEW, form).json()["html"]

    page = documents.article_page(
        Article(
            title="Same page",
            slug="same-page",
            body="Text.",
            publish_at=when,
            byline="王小明",
            tags=["Python", "数据库"],
            description="Short.",
            language="zh-Hans",
        )
    )
    assert re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>\n', "", html) == page
    assert '<html lang="zh-Hans">' in html and "王小明" in html and "数据库" in html


@pytest.mark.django_db
def test_preview__of_a_published_article_leaves_itself_out_as_its_page_does(admin_client):
    """Built without the article's id, a published article's preview listed itself under
    "Related articles" and its rel="prev" link pointed to itself (a review's finding).
    The desk sends the page's id (desk.js, from the panel's data-object-id)."""
    older, me = listed_with_tags(["python"], ["python"])
    when = me.publish_at.replace(microsecond=0)  # as the form's fields have it
    form = article_form(title=me.title, slug=me.slug, body=me.body, when=when)
    form |= {"tags": "python", "article_id": str(me.pk)}

    html = admin_client.post(PREVIEW, form).json()["html"]

    assert f'href="/{me.slug}/"' not in html and f'href="/{older.slug}/"' in html
    me.publish_at = when
    page = documents.article_page(me)
    assert re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>\n', "", html) == page


@pytest.mark.parametrize(
    "sent",
    [
        "",  # a new article's page
        "0",
        "-3",
        "x1",
        "²",  # str.isdigit() says yes, int() refuses
        "9" * 30,  # past a bigint: an error of the query
        "1" * 19,  # a bigint, of no article
    ],
)
@pytest.mark.django_db
def test_preview__an_id_that_is_no_article_id_is_ignored(admin_client, sent):
    form = article_form(title="Any", body="Text.") | {"article_id": sent}

    response = admin_client.post(PREVIEW, form)

    assert response.status_code == 200 and response.json()["problems"] == []


@pytest.mark.django_db
def test_desk__the_panel_carries_the_pages_id(admin_client):
    article = Article.objects.create(title="Has an id", slug="has-an-id", body="Text.")
    page = admin_client.get(f"/admin/publishing/article/{article.pk}/change/").content.decode()
    new = admin_client.get("/admin/publishing/article/add/").content.decode()

    assert f'data-object-id="{article.pk}"' in page and 'data-object-id=""' in new


@pytest.mark.django_db
def test_admin__saving_an_article_keeps_a_tag_with_a_comma_whole(admin_client):
    """The API and the import take a tag with a comma in it; the admin's form shows the
    tags as one line and reads them back: quoted, "Hello, World" stays one tag (it came
    back as two: a review's finding)."""
    tags = ["Hello, World", "C, the language", "plain"]
    article = Article(title="Tagged", slug="tagged", body="Body.", tags=tags)
    article.full_clean()
    article.save()
    page = admin_client.get(f"/admin/publishing/article/{article.pk}/change/").content.decode()
    shown = html.unescape(re.search(r'name="tags"[^>]*value="([^"]*)"', page).group(1))

    when = article.publish_at
    form = article_form(title="Tagged", slug="tagged", body="Body, edited.", when=when)
    response = admin_client.post(
        f"/admin/publishing/article/{article.pk}/change/",
        form
        | {
            "tags": shown,
            "description": "",
            "byline": "",
            "language": "",
            "base_hash": article.content_hash,
        },
    )

    assert response.status_code == 302, response.content[:2000]
    article.refresh_from_db()
    assert (article.body, article.tags) == ("Body, edited.", tags)


@pytest.mark.django_db
def test_preview__says_what_publishing_would_refuse(admin_client):
    answer = admin_client.post(PREVIEW, {"title": "x", "body": "[" * (2**20 + 1)}).json()

    assert answer["html"] == ""
    assert any("the limit is 1,048,576 bytes" in p for p in answer["problems"]), answer


@pytest.mark.django_db
def test_preview__names_the_unclosed_quote_a_save_refuses(admin_client):
    """The save refuses 'python, "Hello, World' (the quote would make the rest one
    tag); the preview showed that tag, saying nothing (a review's finding)."""
    form = article_form(title="Quoted", body="Body.") | {"tags": 'python, "Hello, World'}

    answer = admin_client.post(PREVIEW, form).json()

    assert any("double quote is not closed" in p for p in answer["problems"]), answer
    assert "Hello, World" not in answer["html"]


@pytest.mark.django_db
def test_preview__renders_markdown_the_old_renderer_refused(admin_client):
    """Issue 20: a body's one limit is its size; the old denylist refused this."""
    answer = admin_client.post(PREVIEW, article_form(title="x", body="[" * 10_001)).json()

    assert answer["problems"] == [] and "[[[[" in answer["html"]


@pytest.mark.django_db
def test_preview__staff_only_post_with_csrf(admin_user, client):
    assert client.post(PREVIEW, {"body": "x"}).status_code == 302  # to the login page
    staff = Client(enforce_csrf_checks=True)
    staff.force_login(admin_user)
    assert staff.post(PREVIEW, {"body": "x"}).status_code == 403  # no CSRF token
    assert staff.get(PREVIEW).status_code == 405


@pytest.mark.django_db
def test_preview__refused_to_staff_without_article_permissions(django_user_model, client):
    user = django_user_model.objects.create_user("viewer", password="pw-pw-pw-pw", is_staff=True)
    client.force_login(user)
    assert client.post(PREVIEW, {"body": "x"}).status_code == 403


@pytest.mark.django_db
def test_preview__another_storys_date_is_not_shown_to_a_writer_who_may_not_see_it(
    django_user_model, client
):
    """The posted id names the story whose kept date an undated draft's preview shows:
    a writer with add_story alone learned which ids exist and when each was first
    published (a review of the mend). The id counts only for one who may see stories."""
    secret = story_save(title="Secret", body="Hidden.")
    first = (timezone.now() - timedelta(days=400)).replace(microsecond=0)
    Story.objects.filter(pk=secret.pk).update(first_publish_at=first)
    shown = f'datetime="{timezone.localtime(first).isoformat()}"'
    form = {"title": "Mine", "body": "x", "draft": "1", "article_id": str(secret.pk)}
    adder = django_user_model.objects.create_user("adder", password="pw-pw-pw-pw", is_staff=True)
    adder.user_permissions.add(*Permission.objects.filter(codename__in=["add_story"]))
    client.force_login(adder)

    assert shown not in client.post(PREVIEW, form).json()["html"]

    adder.user_permissions.add(Permission.objects.get(codename="view_story"))
    client.force_login(django_user_model.objects.get(pk=adder.pk))  # its permissions again
    assert shown in client.post(PREVIEW, form).json()["html"]


# --- images ----------------------------------------------------------------------------


def upload(client, data: bytes, name: str, content_type: str = "application/octet-stream"):
    return client.post(IMAGE, {"image": SimpleUploadedFile(name, data, content_type)})


@pytest.mark.parametrize(
    ("data", "name", "content_type", "reason"),
    [
        # a text file named like an image
        (b"just some text\n" * 10, "notes.png", "image/png", "not a PNG, JPEG, GIF or WebP image"),
        # an SVG, with a script in it
        (
            b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
            "logo.svg",
            "image/svg+xml",
            "SVG",
        ),
        # an SVG under another name and type
        (b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>', "x.png", "", "SVG"),
        # a real image, one byte over 10 MiB
        (None, "huge.png", "image/png", "at most 10 MiB"),
        # a BMP: an image, but not one of the four formats
        ("BMP", "old.bmp", "image/bmp", "not a PNG, JPEG, GIF or WebP image"),
        # half a PNG
        ("half", "cut.png", "image/png", "not a PNG, JPEG, GIF or WebP image"),
        # JPEGs whose pixels do not decode, which check() keeps undecoded: a 500 when
        # their copies were made (a review's finding): a lossless JPEG (SOF3, which
        # Pillow cannot decode), a Huffman table of no codes
        ("sof3", "lossless.jpg", "image/jpeg", "its pixels do not decode"),
        ("dht", "no-codes.jpg", "image/jpeg", "its pixels do not decode"),
    ],
)
@pytest.mark.django_db
def test_image__refused_with_its_reason_and_nothing_stored(
    admin_client, data, name, content_type, reason
):
    if data is None:
        png = image_bytes()
        data = png + b"\0" * (10 * 2**20 + 1 - len(png))
    elif data == "BMP":
        data = image_bytes("BMP")
    elif data == "half":
        data = image_bytes(size=(300, 300))[:200]
    elif data == "sof3":
        data = image_bytes("JPEG").replace(b"\xff\xc0", b"\xff\xc3", 1)
    elif data == "dht":
        jpeg = image_bytes("JPEG")
        table = jpeg.index(b"\xff\xc4")  # its 16 counts of codes, each length: all zero
        data = jpeg[: table + 5] + b"\0" * 16 + jpeg[table + 21 :]

    response = upload(admin_client, data, name, content_type)

    assert response.status_code == 400
    assert reason in response.json()["error"], response.json()
    assert Image.objects.count() == 0
    assert not (settings.SITE_ROOT / "media").exists() or not any(
        (settings.SITE_ROOT / "media").iterdir()
    )


@pytest.mark.django_db
def test_image__waits_for_its_turn_then_is_told_to_try_again(admin_client, monkeypatch):
    """One upload cleaned at a time in a process (each may hold hundreds of MB of pixels):
    the next waits, and past IMAGE_WAIT_SECONDS is told to try again, nothing stored."""
    monkeypatch.setattr(images, "IMAGE_WAIT_SECONDS", 0.2)
    with images._cleaning.turn(timeout=5):  # another upload being cleaned
        busy = upload(admin_client, image_bytes("JPEG"), "waits.jpg")

    assert busy.status_code == 503 and busy["Retry-After"] == "5"
    assert "try this one again" in busy.json()["error"]
    assert Image.objects.count() == 0
    assert upload(admin_client, image_bytes("JPEG"), "waits.jpg").status_code == 201


@pytest.mark.django_db(transaction=True)
def test_image__uploads_past_the_one_waiting_are_told_at_once(monkeypatch):
    """One upload waits for the turn; the next is answered 503 at once, not after the
    wait: each waiting upload holds one of the web process's threads (a review's: 14
    uploads at once on 4 threads kept `/healthz` waiting 27 s)."""
    monkeypatch.setattr(images, "IMAGE_WAIT_SECONDS", 120.0)
    outcomes: dict[str, object] = {}

    def store(name: str) -> None:
        try:
            outcomes[name] = images.store(image_bytes("JPEG", colour=name), name=f"{name}.jpg")
        except images.ImageBusy as exc:
            outcomes[name] = exc
        finally:
            connection.close()

    first = threading.Thread(target=store, args=("red",), daemon=True)
    second = threading.Thread(target=store, args=("blue",), daemon=True)
    with images._cleaning.turn(timeout=5):  # another upload being cleaned
        first.start()
        wait_for(lambda: images._cleaning.waiting == 1, timeout=10, what="the first to wait")
        second.start()
        # Within the 120 s wait: told at once, while the first still waits.
        wait_for(lambda: "blue" in outcomes, timeout=20, what="the second to be told")
        assert isinstance(outcomes["blue"], images.ImageBusy)
        assert first.is_alive() and images._cleaning.waiting == 1
    first.join(timeout=30)  # the turn let go: the first is cleaned and stored
    assert isinstance(outcomes["red"], images.StoredImage)
    assert Image.objects.count() == 1 and images._cleaning.waiting == 0


@pytest.mark.django_db
def test_image__an_upload_under_a_unicode_site_path_is_linked_as_every_address_is(settings):
    """SITE_URL https://…/博客: the upload's link is percent-encoded as the pages' links are,
    and the article's page finds it as an upload (its size and copies)."""
    settings.SITE_URL = "https://blog.example.com/博客"
    stored = images.store(image_bytes("JPEG", size=(900, 600)), name="view.jpg")

    assert stored.href == f"/%E5%8D%9A%E5%AE%A2/{stored.path}"
    page = documents.article_page(
        Article(title="图", slug="tu", body=stored.markdown, publish_at=timezone.now()),
        around=None,
    )
    [img] = re.findall(r"<img [^>]*>", page)
    assert f'src="/%E5%8D%9A%E5%AE%A2/{stored.path}"' in img
    assert 'width="900" height="600"' in img and "srcset=" in img, img


@pytest.mark.django_db
def test_image__a_long_screenshot_is_stored_with_the_copies_webp_can_hold(admin_client):
    """800×17,000: taller than WebP allows (16,383), and its encoder's ValueError was a
    500 the desk showed as "Unexpected token"."""
    response = upload(admin_client, image_bytes("JPEG", size=(800, 17_000)), "long.jpg")
    assert response.status_code == 201, response.content
    stored = Image.objects.get()
    types = {(c["width"], c["type"]) for c in stored.renditions["copies"]}
    assert types == {(400, "image/webp"), (400, "image/jpeg")}


@pytest.mark.django_db
def test_image__a_failure_while_storing_is_a_message_and_stores_nothing(admin_client, monkeypatch):
    """Whatever fails inside (here: making the copies), the desk gets a message it can
    show, not an HTML error page, and nothing is stored."""
    from blogpublish.desk import renditions

    def broken(data, *, path):
        raise RuntimeError("an encoder's bug")

    monkeypatch.setattr(renditions, "make", broken)
    response = upload(admin_client, image_bytes(), "photo.png")
    assert response.status_code == 500
    assert "could not be added" in response.json()["error"]
    assert Image.objects.count() == 0


@pytest.mark.django_db
def test_image__location_data_stripped_pixels_and_orientation_kept(admin_client):

    jpeg = image_bytes("JPEG", gps=True)
    assert Pil.open(io.BytesIO(jpeg)).getexif().get_ifd(0x8825)  # it has GPS

    answer = upload(admin_client, jpeg, "holiday.jpg", "image/jpeg").json()

    stored = (settings.SITE_ROOT / answer["path"]).read_bytes()
    assert answer["path"] == f"media/{hashlib.sha256(stored).hexdigest()}.jpg"
    exif = Pil.open(io.BytesIO(stored)).getexif()
    assert 0x8825 not in exif
    assert exif.get_ifd(0x8825) == {}
    assert exif[0x0112] == 6
    # The compressed pixels are byte for byte the same (from the start of scan on).
    assert stored[stored.index(b"\xff\xda") :] == jpeg[jpeg.index(b"\xff\xda") :]


@pytest.mark.django_db
def test_image__png_with_location_is_re_encoded_without_it(admin_client):

    png = image_bytes("PNG", gps=True)
    answer = upload(admin_client, png, "map.png", "image/png").json()

    stored = (settings.SITE_ROOT / answer["path"]).read_bytes()
    image = Pil.open(io.BytesIO(stored))
    assert image.getexif().get_ifd(0x8825) == {}
    assert image.convert("RGB").tobytes() == Pil.open(io.BytesIO(png)).tobytes()


@pytest.mark.django_db
def test_image__same_bytes_twice_is_one_file(admin_client):
    png = image_bytes()
    first = upload(admin_client, png, "a.png").json()
    second = upload(admin_client, png, "b.png").json()
    assert first["path"] == second["path"]
    assert Image.objects.count() == 1
    assert second["markdown"] == f"![b](/{second['path']})"


@pytest.mark.django_db(transaction=True)
def test_image__uploaded_inserted_and_shown_on_the_published_page(worker, admin_client, client):
    png = image_bytes(colour="orange")

    response = upload(admin_client, png, "Sunset [1].png", "image/png")

    assert response.status_code == 201, response.content
    answer = response.json()
    path = answer["path"]
    assert re.fullmatch(r"media/[0-9a-f]{64}\.png", path)
    assert (settings.SITE_ROOT / path).read_bytes() == png  # no location: stored as sent
    assert answer["markdown"] == f"![Sunset 1](/{path})"
    body = f"Before the picture.\n\n{answer['markdown']}\n\nAfter."
    form = article_form(title="With a picture", slug="with-a-picture", body=body)

    preview = admin_client.post(PREVIEW, form).json()["html"]
    assert admin_client.post("/admin/publishing/article/add/", form).status_code == 302
    article = wait_status(Article.objects.get(slug="with-a-picture").pk, ArticleStatus.PUBLISHED)

    page = (settings.SITE_ROOT / article.slug / "index.html").read_text(encoding="utf-8")
    # Sized, lazy, and offered as a WebP copy at its own width (it is 64 pixels wide).
    webp = path.replace(".png", "-64w.webp")
    assert (
        f'<picture><source type="image/webp" srcset="/{webp} 64w" sizes="{SIZES}">'
        f'<img src="/{path}" alt="Sunset 1" loading="lazy" decoding="async" '
        'width="64" height="48"></picture>'
    ) in page
    assert client.get(f"/{webp}")["Content-Type"] == "image/webp"
    assert re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>\n', "", preview) == page
    served = client.get(f"/{path}")
    assert served.status_code == 200
    assert served["Content-Type"] == "image/png"
    assert served.content == png
    assert "img-src 'self'" in served["Content-Security-Policy"]


# --- the article's life ------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_life__dead_article_shows_its_error_and_requeue_publishes_it(worker, admin_client):
    article = Article(title="Doomed", slug="doomed", body="Text.", publish_at=timezone.now())
    article.save()
    wait_status(article.pk, ArticleStatus.PUBLISHED)
    Article.objects.filter(pk=article.pk).update(status=ArticleStatus.DEAD, last_error="disk full")
    change = f"/admin/publishing/article/{article.pk}/change/"

    html = admin_client.get(change).content.decode()

    assert "dead: disk full; the version live since" in html
    requeue = f"/admin/publishing/article/{article.pk}/requeue/"
    # Its own form, before (outside) the article's, so Enter in a field never requeues.
    own_form = html.index(f'<form id="desk-requeue-form" method="post" action="{requeue}"')
    assert own_form < html.index('id="article_form"')
    assert '<button type="submit" class="button desk-requeue" form="desk-requeue-form">' in html
    assert 'href="http://127.0.0.1:8000/doomed/"' in html  # the live page (SITE_URL)
    assert admin_client.get(requeue).status_code == 405
    response = admin_client.post(requeue)
    assert response.status_code == 302 and response["Location"] == change
    article = wait_status(article.pk, ArticleStatus.PUBLISHED)
    assert article.attempts == 1  # a fresh budget: the requeue reset it, then one attempt
    assert "live since" in admin_client.get(change).content.decode()


@pytest.mark.django_db
def test_life__scheduled_publishing_and_list_links(admin_client):
    soon = Article(
        title="Soon", slug="soon", body="x", publish_at=timezone.now() + timedelta(hours=2)
    )
    later = Article(
        title="Later", slug="later", body="x", publish_at=timezone.now() + timedelta(days=3)
    )
    live = Article(title="Live", slug="live", body="x")
    for article in (later, soon, live):
        article.save()
    Article.objects.filter(pk=live.pk).update(
        status=ArticleStatus.PUBLISHED,
        published_hash=live.content_hash,
        published_slug="live",
        published_at=timezone.now(),
    )
    Article.objects.filter(pk=soon.pk).update(attempts=0)

    html = admin_client.get(f"/admin/publishing/article/{soon.pk}/change/").content.decode()
    assert "scheduled for" in html and "(in 2 h)" in html
    assert "Requeue" not in html

    listing = admin_client.get("/admin/publishing/article/").content.decode()
    assert listing.count(">View</a>") == 1
    assert 'href="http://127.0.0.1:8000/live/"' in listing

    scheduled = admin_client.get("/admin/publishing/article/?state=scheduled").content.decode()
    titles = re.findall(
        r'<a href="/admin/publishing/article/\d+/change/[^"]*">([^<]+)</a>', scheduled
    )
    assert titles == ["Soon", "Later"]  # calendar order: the next to go out first


@pytest.mark.django_db
def test_desk__form_carries_the_panel_script_and_cheat_sheet(admin_client):
    html = admin_client.get("/admin/publishing/article/add/").content.decode()
    assert 'id="desk-panel"' in html
    assert 'data-preview-url="/admin/publishing/article/preview/"' in html
    assert "/static/blogpublish/desk/desk.js" in html
    assert "Markdown help" in html and "Scripts, with their content" in html


@pytest.mark.django_db
def test_preview__body_over_the_limit_is_not_rendered_and_says_why(admin_client):
    answer = admin_client.post(PREVIEW, {"title": "你好，世界", "body": "字" * 400_000}).json()

    assert answer["html"] == ""
    assert any("the limit is 1,048,576 bytes" in p for p in answer["problems"]), answer


@pytest.mark.django_db
def test_preview__chinese_title_and_half_typed_date(admin_client):
    answer = admin_client.post(
        PREVIEW, {"title": "你好，世界", "body": "正文", "publish_at_0": "2026-1"}
    ).json()

    assert "<h1>你好，世界</h1>" in answer["html"]
    assert answer["problems"] == ["The publication date is not a valid date and time yet."]


@pytest.mark.django_db
def test_image__without_a_file_says_so(admin_client):
    response = admin_client.post(IMAGE, {})
    assert response.status_code == 400
    assert response.json() == {"error": "Choose an image file to upload."}


@pytest.mark.parametrize("debug", [False, True], ids=["production", "make-run"])
@pytest.mark.parametrize("address", ["/admin/publishing/story/autosave/", PREVIEW])
def test_a_form_too_large_to_read_is_told_so_and_nothing_is_saved(
    admin_user, address, debug, settings
):
    """Over DATA_UPLOAD_MAX_MEMORY_SIZE Django cannot read the fields at all and
    answered a bare 400 (the desk's autosave showed "Not saved yet: 400"): now a 413
    that names the limits, JSON to the desk's fetches, text to a form's submit. With
    CSRF checked, as a browser's request is: the check reads the fields first. With
    DEBUG on too (`make run`), where Django answers its own technical 400 page."""
    settings.DEBUG = debug
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    client.get("/admin/publishing/story/add/")
    token = client.cookies[settings.CSRF_COOKIE_NAME].value
    body = "长" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 3 + 1)  # 3 bytes each in UTF-8
    form = article_form(title="Too large", body=body) | {"csrfmiddlewaretoken": token}
    stories_before = Story.objects.count()

    asked = client.post(address, form, headers={"X-CSRFToken": token, "Accept": "application/json"})
    submitted = client.post(address, form, headers={"X-CSRFToken": token})

    assert asked.status_code == 413, asked.content[:300]
    assert "too large to send" in asked.json()["error"]
    assert "at most 1 MiB" in asked.json()["error"]
    assert submitted.status_code == 413
    assert "Nothing was saved" in submitted.content.decode()
    assert Story.objects.count() == stories_before
