// Routine registration: the table R_init_rcuda hands to R. useDynLib(rcuda, .registration =
// TRUE) then makes each routine an R object (rc_add_alpha, ...) that .Call uses directly.
// Keep it in step with the entry points of the other files (scripts: grep 'extern "C" SEXP').
#include <R.h>
#include <R_ext/Rdynload.h>
#include <Rinternals.h>

extern "C" {
SEXP rc_from_r(SEXP data, SEXP dtype, SEXP device);
SEXP rc_to_r(SEXP x);
SEXP rc_item(SEXP x);
SEXP rc_full(SEXP kind, SEXP size, SEXP value, SEXP dtype, SEXP device);
SEXP rc_random(SEXP kind, SEXP size, SEXP dtype, SEXP device);
SEXP rc_randint(SEXP low, SEXP high, SEXP size, SEXP dtype, SEXP device);
SEXP rc_arange(SEXP start, SEXP end, SEXP step, SEXP dtype, SEXP device);
SEXP rc_linspace(SEXP start, SEXP end, SEXP steps, SEXP dtype, SEXP device);
SEXP rc_eye(SEXP n, SEXP m, SEXP dtype, SEXP device);
SEXP rc_manual_seed(SEXP seed);
SEXP rc_sample(SEXP kind, SEXP x);
SEXP rc_standard_gamma_grad(SEXP alpha, SEXP sample);
SEXP rc_get_rng_state();
SEXP rc_set_rng_state(SEXP state);
SEXP rc_get_default_dtype();
SEXP rc_dtype_canonical(SEXP name);
SEXP rc_set_default_dtype(SEXP dtype);
SEXP rc_set_num_threads(SEXP n);
SEXP rc_num_threads();
SEXP rc_cuda_info();
SEXP rc_cuda_doctor(SEXP gpu_checks);
SEXP rc_cudnn();
SEXP rc_cuda_properties(SEXP device);
SEXP rc_cuda_current_device();
SEXP rc_cuda_synchronize(SEXP device);
SEXP rc_cuda_memory_stats(SEXP device);
SEXP rc_cuda_empty_cache(SEXP device);
SEXP rc_cuda_reset_peak_memory_stats(SEXP device);
SEXP rc_init(SEXP options);
SEXP rc_unload();
SEXP rc_gc_state();
SEXP rc_gc_reset_cpu_peak();
SEXP rc_unary(SEXP op, SEXP x);
SEXP rc_binary(SEXP op, SEXP a, SEXP b);
SEXP rc_add_alpha(SEXP a, SEXP b, SEXP alpha, SEXP subtract);
SEXP rc_clamp(SEXP x, SEXP min, SEXP max);
SEXP rc_where(SEXP condition, SEXP a, SEXP b);
SEXP rc_matmul(SEXP kind, SEXP a, SEXP b);
SEXP rc_linalg(SEXP op, SEXP a, SEXP b, SEXP options);
SEXP rc_complex(SEXP op, SEXP a, SEXP b);
SEXP rc_join(SEXP kind, SEXP tensors, SEXP dim);
SEXP rc_reduce(SEXP kind, SEXP x, SEXP dims, SEXP keepdim, SEXP dtype);
SEXP rc_extreme(SEXP kind, SEXP x, SEXP dim, SEXP keepdim);
SEXP rc_argextreme(SEXP kind, SEXP x, SEXP dim, SEXP keepdim);
SEXP rc_spread(SEXP kind, SEXP x, SEXP dims, SEXP correction, SEXP keepdim);
SEXP rc_along(SEXP kind, SEXP x, SEXP dim);
SEXP rc_gelu(SEXP x, SEXP approximate);
SEXP rc_norm(SEXP x, SEXP p, SEXP dims, SEXP keepdim);
SEXP rc_format(SEXP x);
SEXP rc_meta(SEXP x);
SEXP rc_shape(SEXP x);
SEXP rc_numel(SEXP x);
SEXP rc_is_contiguous(SEXP x, SEXP channels_last);
SEXP rc_strides(SEXP x);
SEXP rc_storage_offset(SEXP x);
SEXP rc_reshape(SEXP kind, SEXP x, SEXP size);
SEXP rc_permute(SEXP x, SEXP dims);
SEXP rc_transpose(SEXP x, SEXP dim0, SEXP dim1);
SEXP rc_t(SEXP x);
SEXP rc_slice(SEXP x, SEXP dim, SEXP start, SEXP end, SEXP step);
SEXP rc_select(SEXP x, SEXP dim, SEXP index);
SEXP rc_narrow(SEXP x, SEXP dim, SEXP start, SEXP length);
SEXP rc_expand(SEXP x, SEXP size);
SEXP rc_squeeze(SEXP x, SEXP dim);
SEXP rc_unsqueeze(SEXP x, SEXP dim);
SEXP rc_flatten(SEXP x, SEXP start_dim, SEXP end_dim);
SEXP rc_copy(SEXP kind, SEXP x);
SEXP rc_to(SEXP x, SEXP dtype, SEXP device);
SEXP rc_index_select(SEXP x, SEXP dim, SEXP index);
SEXP rc_masked_select(SEXP x, SEXP mask);
SEXP rc_nonzero(SEXP x, SEXP as_list);
SEXP rc_index_put(SEXP x, SEXP indices, SEXP value);
SEXP rc_masked_fill(SEXP x, SEXP mask, SEXP value);
SEXP rc_scatter(SEXP op, SEXP x, SEXP dim, SEXP index, SEXP src, SEXP alpha);
SEXP rc_one_hot(SEXP x, SEXP num_classes);
SEXP rc_sparse_coo_tensor(SEXP indices, SEXP values, SEXP size);
SEXP rc_sparse_to_dense(SEXP x);
SEXP rc_sparse_coalesce(SEXP x);
SEXP rc_to_sparse(SEXP x, SEXP sparse_dim);
SEXP rc_sparse_mm(SEXP x, SEXP dense);
SEXP rc_assign(SEXP dst, SEXP src);
SEXP rc_rebind(SEXP x, SEXP view);
SEXP rc_optim_new(SEXP who, SEXP param_lists, SEXP option_lists);
SEXP rc_optim_step(SEXP ptr);
SEXP rc_optim_zero_grad(SEXP ptr, SEXP set_to_none);
SEXP rc_optim_set_groups(SEXP ptr, SEXP param_lists, SEXP option_lists);
SEXP rc_optim_add_group(SEXP ptr, SEXP params, SEXP options);
SEXP rc_optim_state(SEXP ptr);
SEXP rc_optim_load_state(SEXP ptr, SEXP param_ids, SEXP option_lists, SEXP state);
SEXP rc_optim_set_grad(SEXP x, SEXP g);
SEXP rc_optim_get_grad(SEXP x);
SEXP rc_clip_grad_norm(SEXP params, SEXP max_norm, SEXP norm_type, SEXP error_if_nonfinite);
SEXP rc_clip_grad_value(SEXP params, SEXP clip_value);
// autograd.cpp, nn.cpp, nn_init.cpp, nn_module.cpp
SEXP rc_requires_grad(SEXP x);
SEXP rc_set_requires_grad(SEXP x, SEXP flag);
SEXP rc_is_leaf(SEXP x);
SEXP rc_is_undefined(SEXP x);
SEXP rc_is_freed(SEXP x);
SEXP rc_grad(SEXP x);
SEXP rc_set_grad(SEXP x, SEXP value);
SEXP rc_grad_fn(SEXP x);
SEXP rc_grad_fn_name(SEXP node);
SEXP rc_grad_fn_next(SEXP node);
SEXP rc_detach(SEXP x);
SEXP rc_fit_batch(SEXP batch, SEXP device);
SEXP rc_batch_parts(SEXP batch);
SEXP rc_release_point();
SEXP rc_accuracy_update(SEXP correct, SEXP pred, SEXP target);
SEXP rc_loss_sum_new();
SEXP rc_loss_sum_add(SEXP ptr, SEXP loss, SEXP n);
SEXP rc_loss_sum_value(SEXP ptr, SEXP device);
SEXP rc_detach_(SEXP x);
SEXP rc_retain_grad(SEXP x);
SEXP rc_retains_grad(SEXP x);
SEXP rc_register_hook(SEXP x, SEXP fn);
SEXP rc_autograd_function_record(SEXP inputs, SEXP outputs, SEXP run_backward, SEXP differentiable);
SEXP rc_remove_hook(SEXP handle);
SEXP rc_backward(SEXP outputs, SEXP grad_outputs, SEXP retain_graph, SEXP create_graph);
SEXP rc_autograd_grad(SEXP outputs, SEXP inputs, SEXP grad_outputs, SEXP retain_graph,
                      SEXP allow_unused, SEXP create_graph);
SEXP rc_grad_mode(SEXP enabled);
SEXP rc_marked_handle(SEXP x, SEXP marker, SEXP value);
SEXP rc_tensor_ids(SEXP tensors);
SEXP rc_tensor_from_buffer(SEXP buffer, SEXP shape, SEXP dtype);
SEXP rc_buffer_from_tensor(SEXP x);
SEXP rc_data_ptr(SEXP x, SEXP storage);
SEXP rc_empty_strided(SEXP size, SEXP stride, SEXP dtype, SEXP device);
SEXP rc_as_strided(SEXP x, SEXP size, SEXP stride, SEXP storage_offset);
SEXP rc_nn_linear(SEXP x, SEXP weight, SEXP bias);
SEXP rc_nn_fp8_linear(SEXP x, SEXP weight, SEXP bias, SEXP amax_history, SEXP scale, SEXP margin);
SEXP rc_nn_max_pool(SEXP dims, SEXP x, SEXP kernel, SEXP stride, SEXP padding, SEXP dilation,
                    SEXP ceil_mode, SEXP return_indices);
SEXP rc_nn_avg_pool(SEXP dims, SEXP x, SEXP kernel, SEXP stride, SEXP padding, SEXP ceil_mode,
                    SEXP count_include_pad, SEXP divisor_override);
SEXP rc_nn_adaptive_pool(SEXP kind, SEXP x, SEXP output_size, SEXP return_indices);
SEXP rc_nn_batch_norm(SEXP x, SEXP running_mean, SEXP running_var, SEXP weight, SEXP bias,
                      SEXP training, SEXP momentum, SEXP eps);
SEXP rc_nn_group_norm(SEXP x, SEXP num_groups, SEXP weight, SEXP bias, SEXP eps);
SEXP rc_nn_instance_norm(SEXP x, SEXP running_mean, SEXP running_var, SEXP weight, SEXP bias,
                         SEXP use_input_stats, SEXP momentum, SEXP eps);
SEXP rc_nn_pad(SEXP x, SEXP pad, SEXP mode, SEXP value);
SEXP rc_nn_interpolate(SEXP x, SEXP size, SEXP scale_factor, SEXP mode, SEXP align_corners,
                       SEXP recompute_scale_factor);
SEXP rc_nn_conv(SEXP kind, SEXP x, SEXP weight, SEXP bias, SEXP stride, SEXP padding, SEXP dilation,
                SEXP groups, SEXP output_padding);
SEXP rc_nn_rnn(SEXP mode, SEXP input, SEXP hx, SEXP cx, SEXP weights, SEXP num_layers, SEXP dropout,
               SEXP training, SEXP bidirectional, SEXP batch_first);
SEXP rc_nn_activation(SEXP kind, SEXP x, SEXP a, SEXP b, SEXP approximate);
SEXP rc_nn_dropout(SEXP x, SEXP p, SEXP training);
SEXP rc_nn_layer_norm(SEXP x, SEXP normalized_shape, SEXP weight, SEXP bias, SEXP eps);
SEXP rc_nn_embedding(SEXP indices, SEXP weight, SEXP padding_idx);
SEXP rc_nn_regression_loss(SEXP kind, SEXP input, SEXP target, SEXP reduction, SEXP param);
SEXP rc_nn_nll_loss(SEXP input, SEXP target, SEXP weight, SEXP ignore_index, SEXP reduction);
SEXP rc_nn_cross_entropy(SEXP input, SEXP target, SEXP weight, SEXP ignore_index, SEXP reduction,
                         SEXP label_smoothing);
SEXP rc_nn_bce(SEXP input, SEXP target, SEXP weight, SEXP reduction);
SEXP rc_nn_bce_with_logits(SEXP input, SEXP target, SEXP weight, SEXP reduction, SEXP pos_weight);
SEXP rc_nn_kl_div(SEXP input, SEXP target, SEXP reduction, SEXP log_target);
SEXP rc_nn_init(SEXP kind, SEXP x, SEXP args);
SEXP rc_nn_calculate_gain(SEXP nonlinearity, SEXP param);
SEXP rc_nn_fans(SEXP x);
SEXP rc_module_to(SEXP tensors, SEXP dtype, SEXP device, SEXP format);
SEXP rc_zero_grad(SEXP tensors, SEXP set_to_none);
SEXP rc_copy_all(SEXP dst, SEXP src);
SEXP rc_torch_save(SEXP obj, SEXP path);
SEXP rc_torch_load(SEXP path, SEXP device);
SEXP rc_dlpack_entry_points();
SEXP rc_dlpack_source(SEXP x);
SEXP rc_dlpack_consumer_stream(SEXP device_type, SEXP device_id);
SEXP rc_from_dlpack(SEXP address, SEXP versioned, SEXP copy);
SEXP rc_dlpack_counts();
SEXP rc_safetensors_save(SEXP tensors, SEXP metadata, SEXP path);
SEXP rc_index_batch(SEXP tensors, SEXP index, SEXP drop, SEXP caller);
SEXP rc_randperm(SEXP n, SEXP seed);
SEXP rc_sort(SEXP kind, SEXP x, SEXP dim, SEXP descending);
SEXP rc_topk(SEXP x, SEXP k, SEXP dim, SEXP largest, SEXP sorted);
SEXP rc_select_along(SEXP kind, SEXP x, SEXP k, SEXP dim, SEXP keepdim);
SEXP rc_quantile(SEXP x, SEXP q, SEXP dim, SEXP keepdim, SEXP interpolation);
SEXP rc_unique(SEXP x);
SEXP rc_torch_randperm(SEXP n, SEXP dtype, SEXP device);
SEXP rc_bucketize(SEXP x, SEXP boundaries, SEXP out_int32, SEXP right);
SEXP rc_histc(SEXP x, SEXP bins, SEXP min, SEXP max);
SEXP rc_cumulative(SEXP kind, SEXP x, SEXP dim);
SEXP rc_pin_memory(SEXP x);
SEXP rc_is_pinned(SEXP x);
SEXP rc_uint8_from_raw(SEXP bytes, SEXP shape);
// autocast.cpp
SEXP rc_autocast_push(SEXP device_type, SEXP dtype, SEXP enabled);
SEXP rc_autocast_pop(SEXP token);
SEXP rc_autocast_state(SEXP device_type);
SEXP rc_graph_new(SEXP device, SEXP share);
SEXP rc_graph_call(SEXP ptr, SEXP what);
SEXP rc_graph_captured(SEXP ptr);
SEXP rc_graph_is_capturing(SEXP device);
SEXP rc_scaler_new(SEXP init_scale, SEXP growth_factor, SEXP backoff_factor, SEXP growth_interval,
                   SEXP enabled);
SEXP rc_scaler_scale(SEXP ptr, SEXP loss);
SEXP rc_scaler_unscale(SEXP ptr, SEXP optimizer);
SEXP rc_scaler_prepare_step(SEXP ptr, SEXP optimizer);
SEXP rc_scaler_update(SEXP ptr, SEXP new_scale);
SEXP rc_scaler_state(SEXP ptr);
SEXP rc_scaler_load_state(SEXP ptr, SEXP scale, SEXP growth_factor, SEXP backoff_factor,
                          SEXP growth_interval, SEXP growth_tracker);

SEXP rc_trace_begin(SEXP inputs, SEXP names, SEXP parameters, SEXP input_names, SEXP scope);
SEXP rc_trace_end(SEXP tracer, SEXP outputs);
SEXP rc_trace_abort(SEXP tracer);
SEXP rc_graph_run(SEXP ptr, SEXP inputs);
SEXP rc_graph_info(SEXP ptr, SEXP what);
SEXP rc_onnx_export(SEXP ptr, SEXP path, SEXP input_names, SEXP output_names, SEXP dynamic_axes,
                    SEXP opset);
// onnx_load.cpp
SEXP rc_onnx_load(SEXP path, SEXP device, SEXP cuda_graphs);
SEXP rc_onnx_run(SEXP ptr, SEXP inputs);
SEXP rc_onnx_info(SEXP ptr, SEXP what);
SEXP rc_onnx_to(SEXP ptr, SEXP device);
SEXP rc_onnx_set_cuda_graphs(SEXP ptr, SEXP enabled);
// dist.cpp
SEXP rc_dist_init(SEXP backend, SEXP timeout_ms);
SEXP rc_dist_state();
SEXP rc_dist_launch_info();
SEXP rc_dist_destroy();
SEXP rc_dist_collective(SEXP kind, SEXP tensors, SEXP op, SEXP root);
SEXP rc_dist_work(SEXP ptr, SEXP what);
SEXP rc_ddp_new(SEXP parameters, SEXP buffers, SEXP options);
SEXP rc_ddp_call(SEXP ptr, SEXP what);
SEXP rc_ddp_no_sync(SEXP ptr, SEXP token);

static const R_CallMethodDef call_methods[] = {
    {"rc_trace_begin", (DL_FUNC)&rc_trace_begin, 5},
    {"rc_trace_end", (DL_FUNC)&rc_trace_end, 2},
    {"rc_trace_abort", (DL_FUNC)&rc_trace_abort, 1},
    {"rc_graph_run", (DL_FUNC)&rc_graph_run, 2},
    {"rc_graph_info", (DL_FUNC)&rc_graph_info, 2},
    {"rc_onnx_export", (DL_FUNC)&rc_onnx_export, 6},
    {"rc_onnx_load", (DL_FUNC)&rc_onnx_load, 3},
    {"rc_onnx_run", (DL_FUNC)&rc_onnx_run, 2},
    {"rc_onnx_info", (DL_FUNC)&rc_onnx_info, 2},
    {"rc_onnx_to", (DL_FUNC)&rc_onnx_to, 2},
    {"rc_onnx_set_cuda_graphs", (DL_FUNC)&rc_onnx_set_cuda_graphs, 2},
    {"rc_dist_init", (DL_FUNC)&rc_dist_init, 2},
    {"rc_dist_state", (DL_FUNC)&rc_dist_state, 0},
    {"rc_dist_launch_info", (DL_FUNC)&rc_dist_launch_info, 0},
    {"rc_dist_destroy", (DL_FUNC)&rc_dist_destroy, 0},
    {"rc_dist_collective", (DL_FUNC)&rc_dist_collective, 4},
    {"rc_dist_work", (DL_FUNC)&rc_dist_work, 2},
    {"rc_ddp_new", (DL_FUNC)&rc_ddp_new, 3},
    {"rc_ddp_call", (DL_FUNC)&rc_ddp_call, 2},
    {"rc_ddp_no_sync", (DL_FUNC)&rc_ddp_no_sync, 2},
    {"rc_from_r", (DL_FUNC)&rc_from_r, 3},
    {"rc_to_r", (DL_FUNC)&rc_to_r, 1},
    {"rc_item", (DL_FUNC)&rc_item, 1},
    {"rc_full", (DL_FUNC)&rc_full, 5},
    {"rc_random", (DL_FUNC)&rc_random, 4},
    {"rc_randint", (DL_FUNC)&rc_randint, 5},
    {"rc_arange", (DL_FUNC)&rc_arange, 5},
    {"rc_linspace", (DL_FUNC)&rc_linspace, 5},
    {"rc_eye", (DL_FUNC)&rc_eye, 4},
    {"rc_manual_seed", (DL_FUNC)&rc_manual_seed, 1},
    {"rc_sample", (DL_FUNC)&rc_sample, 2},
    {"rc_standard_gamma_grad", (DL_FUNC)&rc_standard_gamma_grad, 2},
    {"rc_get_rng_state", (DL_FUNC)&rc_get_rng_state, 0},
    {"rc_set_rng_state", (DL_FUNC)&rc_set_rng_state, 1},
    {"rc_get_default_dtype", (DL_FUNC)&rc_get_default_dtype, 0},
    {"rc_dtype_canonical", (DL_FUNC)&rc_dtype_canonical, 1},
    {"rc_set_default_dtype", (DL_FUNC)&rc_set_default_dtype, 1},
    {"rc_set_num_threads", (DL_FUNC)&rc_set_num_threads, 1},
    {"rc_num_threads", (DL_FUNC)&rc_num_threads, 0},
    {"rc_cuda_info", (DL_FUNC)&rc_cuda_info, 0},
    {"rc_cuda_doctor", (DL_FUNC)&rc_cuda_doctor, 1},
    {"rc_cudnn", (DL_FUNC)&rc_cudnn, 0},
    {"rc_cuda_properties", (DL_FUNC)&rc_cuda_properties, 1},
    {"rc_cuda_current_device", (DL_FUNC)&rc_cuda_current_device, 0},
    {"rc_cuda_synchronize", (DL_FUNC)&rc_cuda_synchronize, 1},
    {"rc_cuda_memory_stats", (DL_FUNC)&rc_cuda_memory_stats, 1},
    {"rc_cuda_empty_cache", (DL_FUNC)&rc_cuda_empty_cache, 1},
    {"rc_cuda_reset_peak_memory_stats", (DL_FUNC)&rc_cuda_reset_peak_memory_stats, 1},
    {"rc_init", (DL_FUNC)&rc_init, 1},
    {"rc_unload", (DL_FUNC)&rc_unload, 0},
    {"rc_gc_state", (DL_FUNC)&rc_gc_state, 0},
    {"rc_gc_reset_cpu_peak", (DL_FUNC)&rc_gc_reset_cpu_peak, 0},
    {"rc_unary", (DL_FUNC)&rc_unary, 2},
    {"rc_binary", (DL_FUNC)&rc_binary, 3},
    {"rc_add_alpha", (DL_FUNC)&rc_add_alpha, 4},
    {"rc_clamp", (DL_FUNC)&rc_clamp, 3},
    {"rc_where", (DL_FUNC)&rc_where, 3},
    {"rc_matmul", (DL_FUNC)&rc_matmul, 3},
    {"rc_linalg", (DL_FUNC)&rc_linalg, 4},
    {"rc_complex", (DL_FUNC)&rc_complex, 3},
    {"rc_join", (DL_FUNC)&rc_join, 3},
    {"rc_reduce", (DL_FUNC)&rc_reduce, 5},
    {"rc_extreme", (DL_FUNC)&rc_extreme, 4},
    {"rc_argextreme", (DL_FUNC)&rc_argextreme, 4},
    {"rc_spread", (DL_FUNC)&rc_spread, 5},
    {"rc_along", (DL_FUNC)&rc_along, 3},
    {"rc_gelu", (DL_FUNC)&rc_gelu, 2},
    {"rc_norm", (DL_FUNC)&rc_norm, 4},
    {"rc_format", (DL_FUNC)&rc_format, 1},
    {"rc_meta", (DL_FUNC)&rc_meta, 1},
    {"rc_shape", (DL_FUNC)&rc_shape, 1},
    {"rc_numel", (DL_FUNC)&rc_numel, 1},
    {"rc_is_contiguous", (DL_FUNC)&rc_is_contiguous, 2},
    {"rc_strides", (DL_FUNC)&rc_strides, 1},
    {"rc_storage_offset", (DL_FUNC)&rc_storage_offset, 1},
    {"rc_reshape", (DL_FUNC)&rc_reshape, 3},
    {"rc_permute", (DL_FUNC)&rc_permute, 2},
    {"rc_transpose", (DL_FUNC)&rc_transpose, 3},
    {"rc_t", (DL_FUNC)&rc_t, 1},
    {"rc_slice", (DL_FUNC)&rc_slice, 5},
    {"rc_select", (DL_FUNC)&rc_select, 3},
    {"rc_narrow", (DL_FUNC)&rc_narrow, 4},
    {"rc_expand", (DL_FUNC)&rc_expand, 2},
    {"rc_squeeze", (DL_FUNC)&rc_squeeze, 2},
    {"rc_unsqueeze", (DL_FUNC)&rc_unsqueeze, 2},
    {"rc_flatten", (DL_FUNC)&rc_flatten, 3},
    {"rc_copy", (DL_FUNC)&rc_copy, 2},
    {"rc_to", (DL_FUNC)&rc_to, 3},
    {"rc_index_select", (DL_FUNC)&rc_index_select, 3},
    {"rc_masked_select", (DL_FUNC)&rc_masked_select, 2},
    {"rc_nonzero", (DL_FUNC)&rc_nonzero, 2},
    {"rc_index_put", (DL_FUNC)&rc_index_put, 3},
    {"rc_masked_fill", (DL_FUNC)&rc_masked_fill, 3},
    {"rc_scatter", (DL_FUNC)&rc_scatter, 6},
    {"rc_one_hot", (DL_FUNC)&rc_one_hot, 2},
    {"rc_sparse_coo_tensor", (DL_FUNC)&rc_sparse_coo_tensor, 3},
    {"rc_sparse_to_dense", (DL_FUNC)&rc_sparse_to_dense, 1},
    {"rc_sparse_coalesce", (DL_FUNC)&rc_sparse_coalesce, 1},
    {"rc_to_sparse", (DL_FUNC)&rc_to_sparse, 2},
    {"rc_sparse_mm", (DL_FUNC)&rc_sparse_mm, 2},
    {"rc_assign", (DL_FUNC)&rc_assign, 2},
    {"rc_rebind", (DL_FUNC)&rc_rebind, 2},
    {"rc_optim_new", (DL_FUNC)&rc_optim_new, 3},
    {"rc_optim_step", (DL_FUNC)&rc_optim_step, 1},
    {"rc_optim_zero_grad", (DL_FUNC)&rc_optim_zero_grad, 2},
    {"rc_optim_set_groups", (DL_FUNC)&rc_optim_set_groups, 3},
    {"rc_optim_add_group", (DL_FUNC)&rc_optim_add_group, 3},
    {"rc_optim_state", (DL_FUNC)&rc_optim_state, 1},
    {"rc_optim_load_state", (DL_FUNC)&rc_optim_load_state, 4},
    {"rc_optim_set_grad", (DL_FUNC)&rc_optim_set_grad, 2},
    {"rc_optim_get_grad", (DL_FUNC)&rc_optim_get_grad, 1},
    {"rc_clip_grad_norm", (DL_FUNC)&rc_clip_grad_norm, 4},
    {"rc_clip_grad_value", (DL_FUNC)&rc_clip_grad_value, 2},
    {"rc_requires_grad", (DL_FUNC)&rc_requires_grad, 1},
    {"rc_set_requires_grad", (DL_FUNC)&rc_set_requires_grad, 2},
    {"rc_is_leaf", (DL_FUNC)&rc_is_leaf, 1},
    {"rc_is_undefined", (DL_FUNC)&rc_is_undefined, 1},
    {"rc_is_freed", (DL_FUNC)&rc_is_freed, 1},
    {"rc_grad", (DL_FUNC)&rc_grad, 1},
    {"rc_set_grad", (DL_FUNC)&rc_set_grad, 2},
    {"rc_grad_fn", (DL_FUNC)&rc_grad_fn, 1},
    {"rc_grad_fn_name", (DL_FUNC)&rc_grad_fn_name, 1},
    {"rc_grad_fn_next", (DL_FUNC)&rc_grad_fn_next, 1},
    {"rc_detach", (DL_FUNC)&rc_detach, 1},
    {"rc_fit_batch", (DL_FUNC)&rc_fit_batch, 2},
    {"rc_batch_parts", (DL_FUNC)&rc_batch_parts, 1},
    {"rc_release_point", (DL_FUNC)&rc_release_point, 0},
    {"rc_accuracy_update", (DL_FUNC)&rc_accuracy_update, 3},
    {"rc_loss_sum_new", (DL_FUNC)&rc_loss_sum_new, 0},
    {"rc_loss_sum_add", (DL_FUNC)&rc_loss_sum_add, 3},
    {"rc_loss_sum_value", (DL_FUNC)&rc_loss_sum_value, 2},
    {"rc_detach_", (DL_FUNC)&rc_detach_, 1},
    {"rc_retain_grad", (DL_FUNC)&rc_retain_grad, 1},
    {"rc_retains_grad", (DL_FUNC)&rc_retains_grad, 1},
    {"rc_register_hook", (DL_FUNC)&rc_register_hook, 2},
    {"rc_autograd_function_record", (DL_FUNC)&rc_autograd_function_record, 4},
    {"rc_remove_hook", (DL_FUNC)&rc_remove_hook, 1},
    {"rc_backward", (DL_FUNC)&rc_backward, 4},
    {"rc_autograd_grad", (DL_FUNC)&rc_autograd_grad, 6},
    {"rc_grad_mode", (DL_FUNC)&rc_grad_mode, 1},
    {"rc_marked_handle", (DL_FUNC)&rc_marked_handle, 3},
    {"rc_tensor_ids", (DL_FUNC)&rc_tensor_ids, 1},
    {"rc_tensor_from_buffer", (DL_FUNC)&rc_tensor_from_buffer, 3},
    {"rc_buffer_from_tensor", (DL_FUNC)&rc_buffer_from_tensor, 1},
    {"rc_data_ptr", (DL_FUNC)&rc_data_ptr, 2},
    {"rc_empty_strided", (DL_FUNC)&rc_empty_strided, 4},
    {"rc_as_strided", (DL_FUNC)&rc_as_strided, 4},
    {"rc_nn_linear", (DL_FUNC)&rc_nn_linear, 3},
    {"rc_nn_fp8_linear", (DL_FUNC)&rc_nn_fp8_linear, 6},
    {"rc_nn_max_pool", (DL_FUNC)&rc_nn_max_pool, 8},
    {"rc_nn_avg_pool", (DL_FUNC)&rc_nn_avg_pool, 8},
    {"rc_nn_adaptive_pool", (DL_FUNC)&rc_nn_adaptive_pool, 4},
    {"rc_nn_batch_norm", (DL_FUNC)&rc_nn_batch_norm, 8},
    {"rc_nn_group_norm", (DL_FUNC)&rc_nn_group_norm, 5},
    {"rc_nn_instance_norm", (DL_FUNC)&rc_nn_instance_norm, 8},
    {"rc_nn_pad", (DL_FUNC)&rc_nn_pad, 4},
    {"rc_nn_interpolate", (DL_FUNC)&rc_nn_interpolate, 6},
    {"rc_nn_conv", (DL_FUNC)&rc_nn_conv, 9},
    {"rc_nn_rnn", (DL_FUNC)&rc_nn_rnn, 10},
    {"rc_nn_activation", (DL_FUNC)&rc_nn_activation, 5},
    {"rc_nn_dropout", (DL_FUNC)&rc_nn_dropout, 3},
    {"rc_nn_layer_norm", (DL_FUNC)&rc_nn_layer_norm, 5},
    {"rc_nn_embedding", (DL_FUNC)&rc_nn_embedding, 3},
    {"rc_nn_regression_loss", (DL_FUNC)&rc_nn_regression_loss, 5},
    {"rc_nn_nll_loss", (DL_FUNC)&rc_nn_nll_loss, 5},
    {"rc_nn_cross_entropy", (DL_FUNC)&rc_nn_cross_entropy, 6},
    {"rc_nn_bce", (DL_FUNC)&rc_nn_bce, 4},
    {"rc_nn_bce_with_logits", (DL_FUNC)&rc_nn_bce_with_logits, 5},
    {"rc_nn_kl_div", (DL_FUNC)&rc_nn_kl_div, 4},
    {"rc_nn_init", (DL_FUNC)&rc_nn_init, 3},
    {"rc_nn_calculate_gain", (DL_FUNC)&rc_nn_calculate_gain, 2},
    {"rc_nn_fans", (DL_FUNC)&rc_nn_fans, 1},
    {"rc_module_to", (DL_FUNC)&rc_module_to, 4},
    {"rc_zero_grad", (DL_FUNC)&rc_zero_grad, 2},
    {"rc_copy_all", (DL_FUNC)&rc_copy_all, 2},
    {"rc_torch_save", (DL_FUNC)&rc_torch_save, 2},
    {"rc_torch_load", (DL_FUNC)&rc_torch_load, 2},
    {"rc_dlpack_entry_points", (DL_FUNC)&rc_dlpack_entry_points, 0},
    {"rc_dlpack_source", (DL_FUNC)&rc_dlpack_source, 1},
    {"rc_dlpack_consumer_stream", (DL_FUNC)&rc_dlpack_consumer_stream, 2},
    {"rc_from_dlpack", (DL_FUNC)&rc_from_dlpack, 3},
    {"rc_dlpack_counts", (DL_FUNC)&rc_dlpack_counts, 0},
    {"rc_safetensors_save", (DL_FUNC)&rc_safetensors_save, 3},
    {"rc_index_batch", (DL_FUNC)&rc_index_batch, 4},
    {"rc_randperm", (DL_FUNC)&rc_randperm, 2},
    {"rc_sort", (DL_FUNC)&rc_sort, 4},
    {"rc_topk", (DL_FUNC)&rc_topk, 5},
    {"rc_select_along", (DL_FUNC)&rc_select_along, 5},
    {"rc_quantile", (DL_FUNC)&rc_quantile, 5},
    {"rc_unique", (DL_FUNC)&rc_unique, 1},
    {"rc_torch_randperm", (DL_FUNC)&rc_torch_randperm, 3},
    {"rc_bucketize", (DL_FUNC)&rc_bucketize, 4},
    {"rc_histc", (DL_FUNC)&rc_histc, 4},
    {"rc_cumulative", (DL_FUNC)&rc_cumulative, 3},
    {"rc_pin_memory", (DL_FUNC)&rc_pin_memory, 1},
    {"rc_is_pinned", (DL_FUNC)&rc_is_pinned, 1},
    {"rc_uint8_from_raw", (DL_FUNC)&rc_uint8_from_raw, 2},
    {"rc_autocast_push", (DL_FUNC)&rc_autocast_push, 3},
    {"rc_autocast_pop", (DL_FUNC)&rc_autocast_pop, 1},
    {"rc_autocast_state", (DL_FUNC)&rc_autocast_state, 1},
    {"rc_graph_new", (DL_FUNC)&rc_graph_new, 2},
    {"rc_graph_call", (DL_FUNC)&rc_graph_call, 2},
    {"rc_graph_captured", (DL_FUNC)&rc_graph_captured, 1},
    {"rc_graph_is_capturing", (DL_FUNC)&rc_graph_is_capturing, 1},
    {"rc_scaler_new", (DL_FUNC)&rc_scaler_new, 5},
    {"rc_scaler_scale", (DL_FUNC)&rc_scaler_scale, 2},
    {"rc_scaler_unscale", (DL_FUNC)&rc_scaler_unscale, 2},
    {"rc_scaler_prepare_step", (DL_FUNC)&rc_scaler_prepare_step, 2},
    {"rc_scaler_update", (DL_FUNC)&rc_scaler_update, 2},
    {"rc_scaler_state", (DL_FUNC)&rc_scaler_state, 1},
    {"rc_scaler_load_state", (DL_FUNC)&rc_scaler_load_state, 6},
    {nullptr, nullptr, 0}};

void R_init_rcuda(DllInfo* dll) {
  R_registerRoutines(dll, nullptr, call_methods, nullptr, nullptr);
  R_useDynamicSymbols(dll, FALSE);
  R_forceSymbols(dll, TRUE);
}
}
