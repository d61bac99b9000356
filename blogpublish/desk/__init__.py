"""The writer's desk in the Django admin (issue 12): the article's life in words, a
preview rendered as the site renders it, image uploads, and the Markdown cheat sheet.

`blogpublish.admin` puts it on the article's admin page; `publishing` stays free of
HTML (STYLE.md): it knows nothing of this package.
"""
