"""The catalogue's registrations: which types, which attributes a client may write, and how."""
from __future__ import annotations

import colander

from .models import (
    Book,
    Contribution,
    EbookLicence,
    Genre,
    Holding,
    LibraryCard,
    Member,
    Person,
    PrintCopy,
    Publisher,
    Staff,
    Student,
)

#: Attributes written without a colander schema are converted strictly from the column's type
#: (jsonapi_pyramid.jsontypes): this is all the catalogue declares for most types.
BOOK_WRITABLE = ("title", "summary", "pages", "price", "weight", "inPrint", "format", "publishedOn", "updatedAt",
                 "details")


class PersonCreate(colander.MappingSchema):
    name = colander.SchemaNode(colander.String(), validator=colander.Length(min=1, max=200))


class GenreCreate(colander.MappingSchema):
    name = colander.SchemaNode(colander.String(), validator=colander.Length(min=1, max=100))


#: The statistics books offer (``stats[<attribute>]=...``): declared, so that attributes that are
#: not sortable (weight, inPrint, format, updatedAt) have minima and maxima too.
BOOK_STATS = {
    **dict.fromkeys(("title", "inPrint", "format", "publishedOn", "addedAt", "updatedAt"), ("count", "minimum", "maximum")),
    **dict.fromkeys(("pages", "price", "weight", "titleLength", "priceWithTax"), ("count", "minimum", "maximum", "sum", "average")),
    "summary": ("count",), "details": ("count",),
}


def _genre_visibility(config):
    """The visibility rule of genres when ``catalog.hidden_genres`` names an id prefix (else none)."""
    prefix = config.registry.settings.get("catalog.hidden_genres")
    if not prefix:
        return None
    criterion = Genre.id.not_like(prefix.replace("%", "").replace("_", "") + "%")
    return lambda request: criterion


def includeme(config):
    config.add_jsonapi_resource(Publisher, client_ids=True, writable=("name", "opensAt"))
    # aggregates of to-many relationships as sort keys: sum/max of the books' attributes
    config.add_jsonapi_resource(Person, create=PersonCreate,
                                sortable=("name", "written.count", "written.sum.pages", "written.max.publishedOn",
                                          "edited.count"))
    # A text key that holds UUIDs: said here, never guessed from String(36).
    config.add_jsonapi_resource(LibraryCard, id_format="uuid", client_ids=True, writable=("number", "tier"))
    config.add_jsonapi_resource(Book, writable=BOOK_WRITABLE,
                                # computed in SQL: titleLength (column_property), priceWithTax (hybrid)
                                sortable=("title", "pages", "price", "weight", "format", "publishedOn", "addedAt",
                                          "cataloguedAt", "author.name", "titleLength", "priceWithTax"),
                                filterable=("title", "summary", "pages", "price", "weight", "inPrint", "format",
                                            "publishedOn", "addedAt", "updatedAt", "cataloguedAt", "author", "genres",
                                            "genres.parent.name", "publisher.name", "titleLength", "priceWithTax"),
                                # statistics (stats[...]): minima and maxima of attributes not sortable too
                                stats=BOOK_STATS)
    # The self-referential tree, with quantifiers, counts and aggregates both ways; with the
    # setting catalog.hidden_genres (an id prefix) those genres are hidden from every reader.
    config.add_jsonapi_resource(Genre, client_ids=True, create=GenreCreate, visible=_genre_visibility(config),
                                filterable=("name", "bookCount", "parent", "children", "books", "parent.name",
                                            "parent.children"),
                                sortable=("name", "bookCount", "children.count", "children.max.name",
                                          "children.min.name", "books.count", "books.sum.pages", "parent.children.count",
                                          "parent.name"))
    config.add_jsonapi_resource(Contribution, writable=("role",))
    # Inheritance: each class its own type. The bases are registered too: a relationship to a base
    # (Book.holdings, Holding.borrower) shows each row as its own class's type.
    config.add_jsonapi_resource(Member, writable=("name",))
    config.add_jsonapi_resource(Student, writable=("name", "school"))
    config.add_jsonapi_resource(Staff, writable=("name", "department"))
    config.add_jsonapi_resource(Holding)
    config.add_jsonapi_resource(PrintCopy, writable=("shelfMark",))
    config.add_jsonapi_resource(EbookLicence, writable=("licenceKey",))
