// The routes of the two ports, each family in its own file.
#pragma once

#include <httplib.h>

#include "http_util.h"

namespace rcuda::server {

// KServe v2 / Triton REST (kserve_routes.cpp).
void add_kserve_routes(httplib::Server& http, ServerContext& context);
// vetiver's /ping, /metadata and /predict (vetiver_routes.cpp).
void add_vetiver_routes(httplib::Server& http, ServerContext& context);

}  // namespace rcuda::server
