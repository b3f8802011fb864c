"""What the HTTP doors (``/v1``, Livy, the dashboard, HiveServer2 over HTTP) share: the
authenticated caller and the service for a request, parameters and paging, error answers in
each door's shape, the body limit, timing, and the OpenAPI description."""
