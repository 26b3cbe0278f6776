"""``meta[<type>]=estimatedCount`` (CONTRACT section 13) on the blog: wherever ``totalCount`` is
answered (lists, related to-many, to-many linkage), exact under ``jsonapi.exact_count_limit``, the
same visibility, one statement. The path past the limit, with a model of the test's own:
tests/functional/test_estimated_count_any_model.py."""
from __future__ import annotations


def test_estimated_count_is_the_total_under_the_limit_wherever_total_count_is_answered(api, blog):
    document = api.get("/api/articles?meta[articles]=estimatedCount&page[size]=1").json
    assert document["meta"] == {"estimatedCount": 2, "estimatedCountExact": True}
    assert len(document["data"]) == 1 and "meta" not in document["data"][0]
    linkage = api.get(f"/api/users/{blog['admin'].id}/relationships/roles?meta[roles]=estimatedCount").json
    assert linkage["meta"] == {"estimatedCount": 1, "estimatedCountExact": True}
    related = api.get(f"/api/articles/{blog['hello'].id}/comments?meta[comments]=estimatedCount").json
    assert related["meta"] == {"estimatedCount": 2, "estimatedCountExact": True}


def test_estimated_count_follows_the_filters(api, blog, make_articles):
    make_articles(4, blog["bob"])
    query = f"/api/articles?filter[author]={blog['bob'].id}&meta[articles]="
    assert api.get(query + "estimatedCount").json["meta"] == {"estimatedCount": 4, "estimatedCountExact": True}
    assert api.get(query + "totalCount").json["meta"] == {"totalCount": 4}
    assert api.get("/api/articles?meta[articles]=estimatedCount").json["meta"]["estimatedCount"] == 6


def test_hidden_rows_are_left_out_of_the_estimate_as_of_the_total(api, blog, auth_headers):
    query = "/api/articles?meta[articles]=estimatedCount,totalCount"
    anonymous = api.get(query).json["meta"]
    author = api.get(query, headers=auth_headers(blog["alice"])).json["meta"]
    assert anonymous == {"totalCount": 2, "estimatedCount": 2, "estimatedCountExact": True}
    assert author == {"totalCount": 3, "estimatedCount": 3, "estimatedCountExact": True}  # her draft too
    alone = api.get("/api/articles?meta[articles]=estimatedCount", headers=auth_headers(blog["alice"])).json["meta"]
    assert alone == {"estimatedCount": 3, "estimatedCountExact": True}


def test_estimated_count_costs_one_statement_and_none_more_with_the_total(api, blog, count_statements):
    with count_statements() as plain:
        api.get("/api/articles")
    with count_statements() as estimated:
        api.get("/api/articles?meta[articles]=estimatedCount")
    with count_statements() as both:
        api.get("/api/articles?meta[articles]=totalCount,estimatedCount")
    assert len(estimated) == len(plain) + 1
    assert len(both) == len(plain) + 1
    linkage = f"/api/articles/{blog['hello'].id}/relationships/tags"
    with count_statements() as plain_linkage:
        api.get(linkage)
    with count_statements() as estimated_linkage:
        api.get(linkage + "?meta[tags]=estimatedCount")
    assert len(estimated_linkage) == len(plain_linkage) + 1


def test_estimated_count_of_another_type_than_the_data_s_is_left_out(api, blog):
    document = api.get("/api/articles?meta[users]=estimatedCount&include=author").json
    assert "meta" not in document
    assert all("meta" not in resource for resource in document["included"])


def test_estimated_count_beside_cursor_pagination(api, blog, make_articles):
    from jsonapi_pyramid.pagination import PROFILE

    make_articles(3, blog["bob"])
    accept = {"Accept": f'application/vnd.api+json; profile="{PROFILE}"'}
    first = api.get("/api/articles?page[size]=2&meta[articles]=estimatedCount", headers=accept).json
    assert first["meta"]["estimatedCount"] == 5 and first["meta"]["estimatedCountExact"] is True
    following = api.get(first["links"]["next"], headers=accept).json
    assert following["meta"]["estimatedCount"] == 5 and len(following["data"]) == 2
