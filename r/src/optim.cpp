// Optimizers (rcuda::optim) behind an R external pointer, their state dicts in torch for R's
// layout, and gradient clipping. The R side (R/optim.R) keeps each group's options as an R
// list, checks them, and pushes the optimizer's own options here whenever the list changes,
// so that a step is one call into the engine.
//
// Note [Options pushed from R]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Only the names the engine's optimizer knows (its defaults' keys) travel from an R group to
// the engine, each converted to the kind of that default (a number, a flag, a list of
// numbers); anything else in an R group (a scheduler's initial_lr, a user's tag) stays in R.
// Group and parameter numbers in the messages written here are 1-based, as R users count.
#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rcuda/optim/adagrad.h"
#include "rcuda/optim/adam.h"
#include "rcuda/optim/clip_grad.h"
#include "rcuda/optim/rmsprop.h"
#include "rcuda/optim/sgd.h"
#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;
using optim::Optimizer;
using optim::OptionMap;
using optim::OptionValue;
using optim::ParamGroup;

namespace {

// What the external pointer owns: the optimizer and the R name its messages use.
struct Handle {
  std::string who;  // "optim_adam", ...
  std::unique_ptr<Optimizer> optimizer;
};

Handle& handle_of(SEXP ptr) {
  return external_object<Handle>(
      ptr,
      "the optimizer's engine object is gone (an optimizer saved with saveRDS and read back?); "
      "create the optimizer again and load its state_dict()");
}

std::string string_arg(SEXP x) {
  RCUDA_CHECK(Rf_isString(x) && Rf_length(x) == 1, ValueError, "expected a single string");
  return CHAR(STRING_ELT(x, 0));
}

// The option names an optimizer knows, with the kind of each (Note [Options pushed from R]).
OptionMap defaults_of(const std::string& who) {
  if (who == "optim_sgd") return optim::SGDOptions{}.to_map();
  if (who == "optim_adam") return optim::AdamOptions{}.to_map();
  if (who == "optim_adamw") return optim::AdamWOptions{}.to_map();
  if (who == "optim_rmsprop") return optim::RMSpropOptions{}.to_map();
  if (who == "optim_adagrad") return optim::AdagradOptions{}.to_map();
  throw ValueError("unknown optimizer '" + who + "'");
}

bool is_plain_number(SEXP x) {
  return (TYPEOF(x) == REALSXP || TYPEOF(x) == INTSXP) && !Rf_isObject(x);
}

OptionValue option_from_r(SEXP value, const OptionValue& kind, const std::string& who,
                          const std::string& name, size_t group) {
  const std::string where = who + ": param group " + std::to_string(group + 1) + ": " + name;
  if (std::holds_alternative<bool>(kind)) {
    RCUDA_CHECK(TYPEOF(value) == LGLSXP && Rf_length(value) == 1 && LOGICAL(value)[0] != NA_LOGICAL,
                ValueError, where, " must be TRUE or FALSE");
    return LOGICAL(value)[0] != 0;
  }
  RCUDA_CHECK(is_plain_number(value), ValueError, where, " must be numeric, got an R ",
              Rf_type2char(TYPEOF(value)));
  if (std::holds_alternative<double>(kind)) {
    RCUDA_CHECK(Rf_length(value) == 1, ValueError, where, " must be a single number, got ",
                Rf_length(value), " numbers");
    return Rf_asReal(value);
  }
  std::vector<double> numbers(Rf_xlength(value));
  for (R_xlen_t i = 0; i < Rf_xlength(value); ++i)
    numbers[i] = TYPEOF(value) == INTSXP ? INTEGER(value)[i] : REAL(value)[i];
  return numbers;
}

// The engine options present in one R group (a named list).
OptionMap options_from_r(SEXP group, const OptionMap& defaults, const std::string& who,
                         size_t index) {
  OptionMap out;
  for (const auto& [name, kind] : defaults) {
    SEXP value = list_element(group, name.c_str());
    if (value != R_NilValue) out.emplace(name, option_from_r(value, kind, who, name, index));
  }
  return out;
}

// `where` names the list in messages (" of param group 2", or "" for a plain list).
std::vector<Tensor> tensors_from_r(SEXP list, const std::string& who, const std::string& where) {
  RCUDA_CHECK(TYPEOF(list) == VECSXP, ValueError, who, ": the parameters", where,
              " must be a list of tensors");
  std::vector<Tensor> out;
  for (R_xlen_t i = 0; i < Rf_xlength(list); ++i) {
    SEXP p = VECTOR_ELT(list, i);
    RCUDA_CHECK(is_tensor(p), ValueError, who, ": parameter ", i + 1, where, " is an R ",
                Rf_type2char(TYPEOF(p)), ", not a tensor");
    out.push_back(unwrap(p));
  }
  return out;
}

std::string of_group(size_t group) { return " of param group " + std::to_string(group + 1); }

// ValueError for a parameter given twice, across `existing` groups and the new ones.
void check_unique(const std::vector<ParamGroup>& existing, const std::vector<ParamGroup>& added,
                  const std::string& who) {
  std::unordered_map<const TensorImpl*, std::pair<size_t, size_t>> seen;
  auto visit = [&](const ParamGroup& g, size_t gi) {
    for (size_t i = 0; i < g.params.size(); ++i) {
      const auto [it, inserted] = seen.emplace(g.params[i].impl(), std::pair(gi, i));
      RCUDA_CHECK(inserted, ValueError, who, ": parameter ", i + 1, " of param group ", gi + 1,
                  " is also parameter ", it->second.second + 1, " of param group ",
                  it->second.first + 1, "; a parameter may appear only once in an optimizer");
    }
  };
  for (size_t g = 0; g < existing.size(); ++g) visit(existing[g], g);
  for (size_t g = 0; g < added.size(); ++g) visit(added[g], existing.size() + g);
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& who, std::vector<ParamGroup> groups) {
  if (who == "optim_sgd") return std::make_unique<optim::SGD>(std::move(groups));
  if (who == "optim_adam") return std::make_unique<optim::Adam>(std::move(groups));
  if (who == "optim_adamw") return std::make_unique<optim::AdamW>(std::move(groups));
  if (who == "optim_rmsprop") return std::make_unique<optim::RMSprop>(std::move(groups));
  if (who == "optim_adagrad") return std::make_unique<optim::Adagrad>(std::move(groups));
  throw ValueError("unknown optimizer '" + who + "'");
}

SEXP list_elt(SEXP list, R_xlen_t i, const char* what) {
  RCUDA_CHECK(TYPEOF(list) == VECSXP && i < Rf_xlength(list), ValueError, "expected ", what);
  return VECTOR_ELT(list, i);
}

}  // namespace

// who: "optim_sgd", ...; param_lists: one list of tensors per group; option_lists: one named
// list of options per group (filled and checked on the R side).
extern "C" SEXP rc_optim_new(SEXP who, SEXP param_lists, SEXP option_lists) {
  RCUDA_BEGIN
  auto h = std::make_unique<Handle>();
  h->who = string_arg(who);
  const OptionMap defaults = defaults_of(h->who);
  std::vector<ParamGroup> groups;
  for (R_xlen_t g = 0; g < Rf_xlength(param_lists); ++g)
    groups.emplace_back(tensors_from_r(VECTOR_ELT(param_lists, g), h->who, of_group(g)),
                        options_from_r(list_elt(option_lists, g, "one option list per group"),
                                       defaults, h->who, g));
  check_unique({}, groups, h->who);
  h->optimizer = make_optimizer(h->who, std::move(groups));
  return external_pointer(std::move(h));
  RCUDA_END
}

rcuda::optim::Optimizer& rcuda::r::optimizer_of(SEXP ptr) { return *handle_of(ptr).optimizer; }

// One update of every group (Optimizer::step): the whole of `opt$step()` past the closure.
extern "C" SEXP rc_optim_step(SEXP ptr) {
  RCUDA_BEGIN
  gc_safe_point(1);
  handle_of(ptr).optimizer->step();
  return R_NilValue;
  RCUDA_END
}

extern "C" SEXP rc_optim_zero_grad(SEXP ptr, SEXP set_to_none) {
  RCUDA_BEGIN
  gc_safe_point(0);
  handle_of(ptr).optimizer->zero_grad(Rf_asLogical(set_to_none) == TRUE);
  return R_NilValue;
  RCUDA_END
}

// Writes the options of every group from R (the setter of `opt$param_groups`); the groups'
// parameters must be the optimizer's own, in order.
extern "C" SEXP rc_optim_set_groups(SEXP ptr, SEXP param_lists, SEXP option_lists) {
  RCUDA_BEGIN
  Handle& h = handle_of(ptr);
  std::vector<ParamGroup>& groups = h.optimizer->param_groups();
  RCUDA_CHECK(static_cast<size_t>(Rf_xlength(param_lists)) == groups.size(), ValueError, h.who,
              ": param_groups has ", Rf_xlength(param_lists), " groups, the optimizer ",
              groups.size(), "; use add_param_group() to add one");
  const OptionMap defaults = defaults_of(h.who);
  std::vector<OptionMap> options;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::vector<Tensor> params =
        tensors_from_r(VECTOR_ELT(param_lists, g), h.who, of_group(g));
    bool same = params.size() == groups[g].params.size();
    for (size_t i = 0; same && i < params.size(); ++i)
      same = params[i].impl() == groups[g].params[i].impl();
    RCUDA_CHECK(same, ValueError, h.who, ": the params of param group ", g + 1,
                " differ from the optimizer's; param_groups may change options only (use "
                "add_param_group() for new parameters)");
    options.push_back(
        options_from_r(list_elt(option_lists, g, "one option list per group"), defaults, h.who, g));
  }
  // Converted and checked first, so a bad value leaves every group as it was.
  for (size_t g = 0; g < groups.size(); ++g)
    for (auto& [name, value] : options[g]) groups[g].set(name, std::move(value));
  return R_NilValue;
  RCUDA_END
}

extern "C" SEXP rc_optim_add_group(SEXP ptr, SEXP params, SEXP options) {
  RCUDA_BEGIN
  Handle& h = handle_of(ptr);
  const size_t index = h.optimizer->param_groups().size();
  std::vector<ParamGroup> added;
  added.emplace_back(tensors_from_r(params, h.who, of_group(index)),
                     options_from_r(options, defaults_of(h.who), h.who, index));
  check_unique(h.optimizer->param_groups(), added, h.who);
  h.optimizer->add_param_group(std::move(added[0]));
  return R_NilValue;
  RCUDA_END
}

// The per-parameter state as torch for R's state_dict()$state: a list named by the 1-based
// parameter number ("1", "2", ...), each a list of `step` (optimizers that count steps) and the
// buffers by name. The tensors are the optimizer's own (Note [State dict]).
extern "C" SEXP rc_optim_state(SEXP ptr) {
  RCUDA_BEGIN
  const optim::StateDict dict = handle_of(ptr).optimizer->state_dict();
  cpp11::writable::list out(static_cast<R_xlen_t>(dict.state.size()));
  cpp11::writable::strings ids(static_cast<R_xlen_t>(dict.state.size()));
  R_xlen_t k = 0;
  for (const auto& [id, entry] : dict.state) {
    const auto n = static_cast<R_xlen_t>(entry.numbers.size() + entry.tensors.size());
    cpp11::writable::list one(n);
    cpp11::writable::strings names(n);
    R_xlen_t j = 0;
    for (const auto& [name, number] : entry.numbers) {
      one[j] = cpp11::as_sexp(number);
      names[j++] = name;
    }
    for (const auto& [name, tensor] : entry.tensors) {
      one[j] = wrap(tensor);
      names[j++] = name;
    }
    one.attr(R_NamesSymbol) = names;
    out[k] = one;
    ids[k++] = std::to_string(id + 1);
  }
  out.attr(R_NamesSymbol) = ids;
  return out;
  RCUDA_END
}

// Optimizer::load_state_dict from torch for R's layout: param_ids holds each group's 1-based
// parameter numbers, option_lists each group's options, state the list rc_optim_state makes
// (`step` a number or a one-element tensor).
extern "C" SEXP rc_optim_load_state(SEXP ptr, SEXP param_ids, SEXP option_lists, SEXP state) {
  RCUDA_BEGIN
  Handle& h = handle_of(ptr);
  const std::string who = h.who + "$load_state_dict";
  const OptionMap defaults = defaults_of(h.who);
  optim::StateDict dict;
  for (R_xlen_t g = 0; g < Rf_xlength(param_ids); ++g) {
    optim::GroupStateDict group;
    SEXP ids = VECTOR_ELT(param_ids, g);
    RCUDA_CHECK(is_plain_number(ids) || Rf_isNull(ids), ValueError, who, ": params of param group ",
                g + 1, " must be parameter numbers");
    for (R_xlen_t i = 0; i < Rf_xlength(ids); ++i) {
      const double id = TYPEOF(ids) == INTSXP ? INTEGER(ids)[i] : REAL(ids)[i];
      RCUDA_CHECK(id >= 1, ValueError, who, ": parameter number ", id, " in param group ", g + 1,
                  " (numbers start at 1)");
      group.params.push_back(static_cast<int64_t>(id) - 1);
    }
    group.options =
        options_from_r(list_elt(option_lists, g, "one option list per group"), defaults, h.who, g);
    dict.param_groups.push_back(std::move(group));
  }
  SEXP ids = Rf_getAttrib(state, R_NamesSymbol);
  RCUDA_CHECK(Rf_xlength(state) == 0 || ids != R_NilValue, ValueError, who,
              ": state must be a list named by parameter number");
  for (R_xlen_t k = 0; k < Rf_xlength(state); ++k) {
    const std::string id_text = CHAR(STRING_ELT(ids, k));
    char* end = nullptr;
    const long id = std::strtol(id_text.c_str(), &end, 10);
    RCUDA_CHECK(end != id_text.c_str() && *end == '\0' && id >= 1, ValueError, who,
                ": state entry '", id_text, "' is not a parameter number (1, 2, ...)");
    SEXP entry = VECTOR_ELT(state, k);
    SEXP names = Rf_getAttrib(entry, R_NamesSymbol);
    RCUDA_CHECK(TYPEOF(entry) == VECSXP && (Rf_xlength(entry) == 0 || names != R_NilValue),
                ValueError, who, ": the state of parameter ", id, " must be a named list");
    optim::ParamStateDict saved;
    for (R_xlen_t j = 0; j < Rf_xlength(entry); ++j) {
      const std::string name = CHAR(STRING_ELT(names, j));
      SEXP value = VECTOR_ELT(entry, j);
      if (is_tensor(value) && name != "step") {
        saved.tensors.emplace(name, unwrap(value));
      } else if (is_tensor(value)) {
        RCUDA_CHECK(unwrap(value).numel() == 1, ValueError, who, ": step of parameter ", id,
                    " has ", unwrap(value).numel(), " elements, expected 1");
        saved.numbers.emplace(name, item(unwrap(value)).to_double());
      } else {
        RCUDA_CHECK(is_plain_number(value) && Rf_length(value) == 1, ValueError, who, ": ", name,
                    " of parameter ", id, " must be a tensor or a single number");
        saved.numbers.emplace(name, Rf_asReal(value));
      }
    }
    dict.state.emplace(id - 1, std::move(saved));
  }
  h.optimizer->load_state_dict(dict);
  return R_NilValue;
  RCUDA_END
}

// Internal (not exported): a tensor's gradient, for tests and for R code that runs before the
// autograd API is loaded. NULL as g clears it.
extern "C" SEXP rc_optim_set_grad(SEXP x, SEXP g) {
  RCUDA_BEGIN
  unwrap(x).set_grad(Rf_isNull(g) ? Tensor() : unwrap(g));
  return R_NilValue;
  RCUDA_END
}

extern "C" SEXP rc_optim_get_grad(SEXP x) {
  RCUDA_BEGIN
  const Tensor grad = unwrap(x).grad();
  return grad.defined() ? wrap(grad) : R_NilValue;
  RCUDA_END
}

extern "C" SEXP rc_clip_grad_norm(SEXP params, SEXP max_norm, SEXP norm_type,
                                  SEXP error_if_nonfinite) {
  RCUDA_BEGIN
  const std::vector<Tensor> list = tensors_from_r(params, "nn_utils_clip_grad_norm_", "");
  return wrap(optim::clip_grad_norm_(list, Rf_asReal(max_norm), Rf_asReal(norm_type),
                                     Rf_asLogical(error_if_nonfinite) == TRUE));
  RCUDA_END
}

extern "C" SEXP rc_clip_grad_value(SEXP params, SEXP clip_value) {
  RCUDA_BEGIN
  optim::clip_grad_value_(tensors_from_r(params, "nn_utils_clip_grad_value_", ""),
                          Rf_asReal(clip_value));
  return R_NilValue;
  RCUDA_END
}
