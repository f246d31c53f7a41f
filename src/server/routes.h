// Route handlers, one file per API family. Each reads the request strictly,
// throws ApiError / kiln::Error for what is wrong, and fills the response.
#pragma once

#include "kiln/constraint.h"

#include "generation_fields.h"
#include "state.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace kiln::server {

void handle_chat_completions(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_responses(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_response_get(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_response_delete(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_response_input_items(ServerState& state, const httplib::Request& req, httplib::Response& res);
// The prompt's token count for a chat request (nothing is generated).
void handle_chat_input_tokens(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_completions(ServerState& state, const httplib::Request& req, httplib::Response& res);
// Embeddings (embeddings_api.cpp): OpenAI's /v1/embeddings and Ollama's /api/embed.
void handle_embeddings(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_ollama_embed(ServerState& state, const httplib::Request& req, httplib::Response& res);
// Reranking: Jina's shape (query, documents, top_n) and TEI's (query, texts, return_text).
void handle_rerank(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_models(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_models_load(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_models_unload(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_models_cache(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_health(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_props(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_tokenize(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_detokenize(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_apply_template(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_messages(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_count_tokens(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_ollama_chat(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_ollama_generate(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_ollama_tags(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_ollama_ps(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_ollama_show(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_ollama_version(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_metrics(ServerState& state, const httplib::Request& req, httplib::Response& res);
// The inference gateway's metrics (vLLM-compatible names too), appended to /metrics.
void append_gateway_metrics(ServerState& state, std::string& out);
// A sample value as Prometheus text: integers without a fraction.
std::string prometheus_number(double v);
// The web explorer's routes (explorer_routes.cpp, explorer_live.cpp; docs/web.md).
void handle_explore_models(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_explore_open(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_explore_array(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_explore_tensor(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_explore_vocab(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_explore_cache(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_explore_live_start(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_explore_live_step(ServerState& state, const httplib::Request& req, httplib::Response& res);
void handle_explore_live_close(ServerState& state, const httplib::Request& req, httplib::Response& res);

// Chat helpers shared by the chat and template routes.
struct ChatPrompt {
    std::string text;             // rendered prompt + assistant prefill
    std::string assistant_prefix; // the last message's content when it is the assistant's (continued)
    Json tools;                   // offered tools (null when none or tool_choice none)
    std::shared_ptr<const Grammar> grammar;  // response_format, or the tool calls: the reply's constraint
    std::vector<std::string> grammar_triggers;  // non-empty: the grammar starts at the first of these (tool_choice auto)
    std::vector<size_t> message_offsets;        // where messages (and the generation prompt) start in text
};
ChatPrompt render_chat_prompt(const LoadedModel& model, const Json& body);
// A response format object ({"type": "text" | "json_object" | "json_schema", ...})
// as the reply's grammar (null for text); 400 naming what cannot be enforced.
std::shared_ptr<const Grammar> response_grammar(const Json& format, const std::string& where);
// The prompt's tokens; 400 when they alone fill the context.
std::vector<TokenId> chat_prompt_tokens(const LoadedModel& model, const ChatPrompt& prompt);
// One choice of a chat request: its sequence, with a ReplyParser fed the prefill.
Job make_chat_job(const LoadedModel& model, const ChatPrompt& prompt, const std::vector<TokenId>& ids,
                  const GenerationFields& fields, int index, std::shared_ptr<Channel> channel);

// Logprob entries of one token, OpenAI chat shape.
Json token_logprob_json(const Tokenizer& tok, const TokenEvent& e);

}  // namespace kiln::server
