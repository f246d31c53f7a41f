// One resident model: its weights, its chat template and reply format, and the
// scheduler (with its Engine and thread) that generates for it.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "kiln/jinja.h"
#include "kiln/model.h"
#include "kiln/reply_format.h"
#include "scheduler.h"

namespace kiln::server {

struct LoadedModel {
    std::shared_ptr<const Model> model;
    std::string name;           // the file's stem: what `model` fields name
    std::string file_name;      // also accepted
    int64_t created = 0;        // unix seconds of the load
    std::string fingerprint;    // tells model files apart (model_fingerprint in server.cpp)
    std::optional<std::string> template_source;  // none: chat routes answer 400
    std::string template_origin;
    std::optional<jinja::Template> chat_template;
    ChatFormat format;
    std::string bos_text, eos_text;
    std::unique_ptr<Scheduler> scheduler;
};

}  // namespace kiln::server
