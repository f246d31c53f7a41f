#include "job_runner.h"

#include <httplib.h>

#include <chrono>

#include "client_socket.h"

namespace kiln::server {

namespace {

constexpr auto k_keep_alive = std::chrono::seconds(5);
constexpr auto k_client_check = std::chrono::milliseconds(200);

}  // namespace

void record_usage(ServerState& state, const GenerationResult& r) {
    Metrics& m = state.metrics;
    m.prompt_tokens += static_cast<uint64_t>(r.prompt_tokens - r.reused_tokens);
    m.cached_tokens += static_cast<uint64_t>(r.reused_tokens);
    m.generated_tokens += static_cast<uint64_t>(r.completion_tokens);
    m.prefill_us += static_cast<uint64_t>(r.prefill_seconds * 1e6);
    m.decode_us += static_cast<uint64_t>(r.decode_seconds * 1e6);
    m.drafted_tokens += static_cast<uint64_t>(r.spec.drafted);
    m.accepted_tokens += static_cast<uint64_t>(r.spec.accepted);
}

Json timings_json(int prompt_n, int cache_n, double prompt_s, int predicted_n, double predicted_s, int draft_n,
                  int draft_n_accepted) {
    return {{"cache_n", cache_n},
            {"prompt_n", prompt_n},
            {"prompt_ms", prompt_s * 1e3},
            {"prompt_per_token_ms", prompt_n > 0 ? prompt_s * 1e3 / prompt_n : 0.0},
            {"prompt_per_second", prompt_s > 0 ? prompt_n / prompt_s : 0.0},
            {"predicted_n", predicted_n},
            {"predicted_ms", predicted_s * 1e3},
            {"predicted_per_token_ms", predicted_n > 0 ? predicted_s * 1e3 / predicted_n : 0.0},
            {"predicted_per_second", predicted_s > 0 ? predicted_n / predicted_s : 0.0},
            {"draft_n", draft_n},
            {"draft_n_accepted", draft_n_accepted}};
}

void run_jobs(ServerState& state, const httplib::Request& req, std::shared_ptr<LoadedModel> model, std::vector<Job> jobs,
              std::shared_ptr<Channel> channel, std::shared_ptr<ResponseBuilder> builder, bool stream,
              httplib::Response& res, std::function<void()> after_stream) {
    const int n = static_cast<int>(jobs.size());
    model->scheduler->enqueue(std::move(jobs));
    state.metrics.requests++;
    state.in_flight++;
    if (!stream) {
        struct Leave {
            std::atomic<int>& count;
            ~Leave() { count--; }
        } leave{state.in_flight};
        int done = 0;
        std::optional<JobEvent> failed;
        // Nothing is written before the end, so the socket is watched instead:
        // a client that left cancels its sequences at the next step.
        const ClientSocket client(req);
        auto next_check = std::chrono::steady_clock::now() + k_client_check;
        while (done < n) {
            std::optional<JobEvent> e = channel->pop(k_client_check);
            if (std::chrono::steady_clock::now() >= next_check) {  // tokens keep coming: check by the clock
                next_check = std::chrono::steady_clock::now() + k_client_check;
                if (!channel->cancelled && client.gone()) {
                    channel->cancelled = true;
                    state.metrics.disconnects++;
                }
            }
            if (!e) continue;
            if (e->kind == JobEvent::Kind::Failed) {
                ++done;
                failed = std::move(e);
                channel->cancelled = true;  // the other choices are of no use now
                continue;
            }
            if (e->kind == JobEvent::Kind::Done) {
                ++done;
                record_usage(state, e->result);
            }
            builder->add(*e, nullptr);
        }
        if (failed) throw ApiError(status_of(failed->error_kind), failed->error);
        res.set_content(json_text(builder->response()), "application/json");
        return;
    }
    struct StreamState {
        int done = 0;
        bool finished = false;
    };
    auto st = std::make_shared<StreamState>();
    ServerState* server = &state;
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        builder->stream_content_type(),
        [st, channel, builder, n, server](size_t, httplib::DataSink& sink) {
            std::optional<JobEvent> e = channel->pop(k_keep_alive);
            std::string out;
            if (!e) {
                out = builder->keep_alive_frame();  // also finds out whether the client is still there
            } else if (e->kind == JobEvent::Kind::Failed) {
                ++st->done;
                out = builder->error_frame(status_of(e->error_kind), e->error);
            } else {
                if (e->kind == JobEvent::Kind::Done) {
                    ++st->done;
                    record_usage(*server, e->result);
                }
                std::vector<Json> chunks;
                builder->add(*e, &chunks);
                for (const Json& c : chunks) out += builder->frame(c);
            }
            if (st->done == n) {
                for (const Json& c : builder->stream_end()) out += builder->frame(c);
                out += builder->end_frame();
            }
            if (!out.empty() && !sink.write(out.data(), out.size())) {
                channel->cancelled = true;
                return false;
            }
            if (st->done == n) {
                st->finished = true;
                sink.done();
            }
            return true;
        },
        [st, channel, server, model, after_stream](bool) mutable {
            if (!st->finished) {  // the client left mid-stream
                channel->cancelled = true;
                server->metrics.disconnects++;
            }
            model.reset();
            if (after_stream) after_stream();
            server->in_flight--;
        });
}

}  // namespace kiln::server
