# serve() end to end: the iris classifier behind `rcuda serve`, queried from R and with curl.
#   Rscript make_model.R      # writes model.onnx
#   Rscript serve.R
library(rcuda)

if (!file.exists("model.onnx")) stop("run make_model.R first: it writes model.onnx")

# The ONNX file under the name "iris", on a free port. Requests arriving within 500 us of each
# other run as one batch of up to 64 rows.
server <- serve("model.onnx", name = "iris", port = 0, max_batch_size = 64,
                max_queue_delay_us = 500)
print(server)

x <- as.matrix(iris[c(1, 51, 101), 1:4])
probs <- server$predict(x)                     # a 3 x 3 matrix: one row per flower
print(round(probs, 3))
print(levels(iris$Species)[max.col(probs)])    # setosa, versicolor, virginica

str(server$metadata()$inputs)                  # x: FP32, shape [-1, 4]

# A wrong request is an R error with the server's message, which names the input.
tryCatch(server$predict(matrix(0, 2, 3)),
         rcuda_serve_error = function(e) cat(conditionMessage(e), "\n"))

# Any HTTP client works: KServe v2 (curl, Triton's and KServe's clients) and vetiver's routes.
kserve <- '{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[5.1,3.5,1.4,0.2]}]}'
vetiver <- jsonlite::toJSON(iris[1, 1:4])   # a data frame's rows, as vetiver's clients send
cat(sprintf("\ncurl -s %s/v2/models/iris/infer -d '%s'\n", server$url, kserve))
cat(sprintf("curl -s %s/predict -d '%s'\n", server$url, vetiver))
ping <- curl::curl_fetch_memory(paste0(server$url, "/ping"))
cat("/ping:", rawToChar(ping$content), "\n")

# A module is served the same way: serve() exports it with onnx_export on an example batch.
net <- nn_sequential(nn_linear(4, 8), nn_relu(), nn_linear(8, 2))
second <- serve(net, torch_randn(2, 4), name = "net", port = 0)
y <- second$predict(x)
net$eval()
stopifnot(max(abs(y - as_array(with_no_grad(net(torch_tensor(x)))))) < 1e-5)
second$stop()

server$stop()                                  # SIGTERM: answers what is queued, exits 0
