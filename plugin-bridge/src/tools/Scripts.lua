-- tools/Scripts.lua - reading and editing script source through ScriptEditorService
-- (GetEditorSource / UpdateSourceAsync), so drafts and open editors agree with what the tools
-- read and write. Lines are numbered from 1; line edits accept an optional `expected` text that
-- must equal the current lines (compare-and-set, so an edit based on a stale read is refused).

local Paths = require(script.Parent.Parent.Paths)
local U = require(script.Parent.Util)
local Paging = require(script.Parent.Paging)

local DEFAULT_MAX_CHARS = 100000
local MAX_SOURCE = 1000000

local function lineRange(args, count)
	local s = args.start_line
	local e = args.end_line
	if type(s) ~= "number" or s ~= math.floor(s) or s < 1 then
		error("start_line must be an integer >= 1", 0)
	end
	if e == nil then
		e = s
	end
	if type(e) ~= "number" or e ~= math.floor(e) then
		error("end_line must be an integer", 0)
	end
	if e < s then
		error("end_line (" .. e .. ") is before start_line (" .. s .. ")", 0)
	end
	if s > count then
		error("start_line " .. s .. " is past the end: the script has " .. count .. " lines", 0)
	end
	if e > count then
		error("end_line " .. e .. " is past the end: the script has " .. count .. " lines", 0)
	end
	return s, e
end

local function checkExpected(args, lines, s, e, path)
	if args.expected == nil then
		return
	end
	local cur = {}
	for i = s, e do
		table.insert(cur, lines[i])
	end
	local text = table.concat(cur, "\n")
	if text ~= args.expected then
		error("lines " .. s .. "-" .. e .. " of " .. path .. " are not the expected text (the script changed"
			.. " since it was read); they are now:\n" .. text, 0)
	end
end

local function store(ctx, scr, lines)
	local text = U.joinLines(lines)
	if #text > MAX_SOURCE then
		error("the new source would be " .. #text .. " characters; the limit is " .. MAX_SOURCE, 0)
	end
	U.setSource(ctx, scr, text)
	return #lines
end

-- Compiles text as a chunk named name (loadstring compiles, it runs nothing); nil when it
-- compiles, else {line, message} of the first error ("name:LINE: message").
local function syntaxError(text, name)
	local ok, fn, err = pcall(loadstring, text, "=" .. name)
	if ok and fn then
		return nil
	end
	err = tostring(ok and err or fn)
	local line, msg = string.match(err, ":(%d+): (.*)$")
	return { line = tonumber(line), message = msg or err }
end

local T = {}

T.check_syntax = {
	readOnly = true,
	run = function(args, ctx)
		local source = U.str(args, "source", true)
		local pager = Paging.new(U, args, 500, 5000)
		local path = args.path
		if source ~= nil then
			local e = syntaxError(source, "source")
			if e then
				e.path = "source"
			end
			return { checked = 1, ok = e == nil, errors = { e } }
		end
		local root = U.root(ctx, { path = path })
		if U.isScript(root) then
			pager:add(root)
		else
			U.walk(root, function(inst)
				if U.isScript(inst) then
					return pager:add(inst)
				end
				return false
			end)
		end
		local list = pager.items
		local errors = {}
		for i, scr in ipairs(list) do
			local where = Paths.format(scr)
			local okS, src = pcall(U.getSource, ctx, scr)
			if okS and type(src) == "string" then
				local e = syntaxError(src, where)
				if e then
					e.path = where
					table.insert(errors, e)
				end
			end
			if i % 200 == 0 then
				task.wait() -- compiling many scripts: let the poll loop run
			end
		end
		local out = pager:finish({ checked = #list, ok = #errors == 0, errors = errors }, "scripts", "scripts")
		out.scripts = nil -- the page's scripts are counted by checked; errors name theirs
		return out
	end,
}

T.get_script_source = {
	readOnly = true,
	run = function(args, ctx)
		local scr = U.script(ctx, U.str(args, "path"))
		local src = U.getSource(ctx, scr)
		local lines = U.splitLines(src)
		local s = U.int(args, "start_line", 1, 1, math.max(#lines, 1))
		local e = U.int(args, "end_line", #lines, s, math.max(#lines, s))
		local maxChars = U.int(args, "max_chars", DEFAULT_MAX_CHARS, 100, MAX_SOURCE)
		local out, size = {}, 0
		local last = s - 1
		for i = s, e do
			local l = lines[i] or ""
			if size + #l + 1 > maxChars and i > s then
				break
			end
			table.insert(out, l)
			size = size + #l + 1
			last = i
		end
		local res = {
			path = Paths.format(scr),
			className = scr.ClassName,
			lineCount = #lines,
			startLine = s,
			endLine = last,
			source = table.concat(out, "\n"),
			truncated = last < e,
		}
		if res.truncated then
			res.note = "cut at max_chars=" .. maxChars .. "; continue with start_line=" .. (last + 1)
		end
		return res
	end,
}

T.set_script_source = {
	readOnly = false,
	run = function(args, ctx)
		local scr = U.script(ctx, U.str(args, "path"))
		local src = U.str(args, "source")
		if #src > MAX_SOURCE then
			error("source is " .. #src .. " characters; the limit is " .. MAX_SOURCE, 0)
		end
		U.setSource(ctx, scr, src)
		return { path = Paths.format(scr), lineCount = #U.splitLines(src), characters = #src }
	end,
}

T.edit_script_lines = {
	readOnly = false,
	run = function(args, ctx)
		local scr = U.script(ctx, U.str(args, "path"))
		local replacement = U.str(args, "replacement")
		local lines = U.splitLines(U.getSource(ctx, scr))
		local s, e = lineRange(args, #lines)
		checkExpected(args, lines, s, e, Paths.format(scr))
		local new = {}
		for i = 1, s - 1 do
			table.insert(new, lines[i])
		end
		local repl = U.splitLines(replacement)
		for _, l in ipairs(repl) do
			table.insert(new, l)
		end
		for i = e + 1, #lines do
			table.insert(new, lines[i])
		end
		local count = store(ctx, scr, new)
		return { path = Paths.format(scr), replaced = { s, e }, newLines = { s, s + #repl - 1 }, lineCount = count }
	end,
}

T.insert_script_lines = {
	readOnly = false,
	run = function(args, ctx)
		local scr = U.script(ctx, U.str(args, "path"))
		local text = U.str(args, "lines")
		local lines = U.splitLines(U.getSource(ctx, scr))
		local after = args.after_line
		if type(after) ~= "number" or after ~= math.floor(after) or after < 0 then
			error("after_line must be an integer >= 0 (0 inserts at the top)", 0)
		end
		if after > #lines then
			error("after_line " .. after .. " is past the end: the script has " .. #lines .. " lines", 0)
		end
		local ins = U.splitLines(text)
		local new = {}
		for i = 1, after do
			table.insert(new, lines[i])
		end
		for _, l in ipairs(ins) do
			table.insert(new, l)
		end
		for i = after + 1, #lines do
			table.insert(new, lines[i])
		end
		local count = store(ctx, scr, new)
		return { path = Paths.format(scr), inserted = { after + 1, after + #ins }, lineCount = count }
	end,
}

T.delete_script_lines = {
	readOnly = false,
	run = function(args, ctx)
		local scr = U.script(ctx, U.str(args, "path"))
		local lines = U.splitLines(U.getSource(ctx, scr))
		local s, e = lineRange(args, #lines)
		checkExpected(args, lines, s, e, Paths.format(scr))
		local new = {}
		for i = 1, #lines do
			if i < s or i > e then
				table.insert(new, lines[i])
			end
		end
		if #new == 0 then
			new = { "" }
		end
		local count = store(ctx, scr, new)
		return { path = Paths.format(scr), deleted = { s, e }, lineCount = count }
	end,
}

return T
