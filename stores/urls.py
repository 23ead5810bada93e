from django.urls import path

from stores import apis

urlpatterns = [
    path("indexes", apis.IndexListCreateApi.as_view(), name="index-list"),
    path("indexes/<str:index_id>", apis.IndexDetailApi.as_view(), name="index-detail"),
    path("memory/stores/<str:index_id>", apis.StoreDetailApi.as_view(), name="store-detail"),
]
