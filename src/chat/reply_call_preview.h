// How far a JSON tool-call body has got while the model is still writing it:
// each call's name once it is complete, and where its arguments object starts
// and how far it goes. The reply parser streams the arguments from this
// (ToolCallStart / ToolCallArguments) and takes the finished call's
// arguments_text from the same scan of the whole body, so streamed pieces and
// the final text agree for every split of the reply.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln::reply_detail {

// One call object the scan reached, in body order (as parse_tool_body lists them).
struct CallPreview {
    std::string name;
    bool streams = false;  // its arguments object started: args_from / args_to are set
    size_t args_from = 0;  // offset of the arguments object's '{' in the body
    size_t args_to = 0;    // end of its text so far (its end once complete)
    bool args_complete = false;
};

// For JsonCalls bodies (one {"name": ..., "arguments": {...}} object, a list of
// them, several in a row, optionally in a ``` fence). A call streams only when
// "name" (a string) comes before "arguments" / "parameters" (an object) and no
// key this reader does not follow ("function", "id", "tool_name") came before
// them; the scan stops at the first object that is not so (after listing it if
// it streams), and at text it cannot read yet. `complete`: the body is whole (a
// value at its very end is then finished, not still being written).
std::vector<CallPreview> preview_json_calls(std::string_view body, bool complete);

}  // namespace kiln::reply_detail
