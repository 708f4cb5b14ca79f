-- plugin-bridge/tests/runner.lua - a tiny test runner for the plugin's lua5.1 tests.
--
--   lua5.1 plugin-bridge/tests/runner.lua plugin-bridge/tests/test_values.lua [more files]
--
-- A test file calls test(name, fn) for each test; fn fails by raising an error (use the
-- helpers below). Prints one line per failure, then "N passed, N failed"; exits 1 on failure.
-- Set RUNBOX_LUA_TRACE=1 for a traceback with each failure.
-- Helpers (globals while a file loads and runs):
--   eq(actual, expected, what?)        primitive/Roblox-value equality (==)
--   same(actual, expected, what?)      deep equality of plain tables
--   truthy(v, what?)
--   raises(fn, pattern?) -> message    fn must raise; the message must contain pattern (plain)

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. here .. "/?/init.lua;" .. package.path

local cjson = require("cjson")

local function show(v)
	if type(v) == "table" and not getmetatable(v) then
		local ok, s = pcall(cjson.encode, v)
		if ok then
			return s
		end
	end
	if type(v) == "string" then
		return string.format("%q", v)
	end
	return tostring(v)
end

function eq(actual, expected, what)
	if actual ~= expected then
		error((what and (what .. ": ") or "") .. "expected " .. show(expected) .. ", got " .. show(actual), 2)
	end
end

local function deepEqual(a, b)
	if type(a) ~= "table" or type(b) ~= "table" or getmetatable(a) or getmetatable(b) then
		return a == b
	end
	for k, v in pairs(a) do
		if not deepEqual(v, b[k]) then
			return false
		end
	end
	for k in pairs(b) do
		if a[k] == nil then
			return false
		end
	end
	return true
end

function same(actual, expected, what)
	if not deepEqual(actual, expected) then
		error((what and (what .. ": ") or "") .. "expected " .. show(expected) .. ", got " .. show(actual), 2)
	end
end

function truthy(v, what)
	if not v then
		error((what or "value") .. " is " .. show(v), 2)
	end
end

function raises(fn, pattern)
	local ok, err = pcall(fn)
	if ok then
		error("expected an error" .. (pattern and (" containing " .. show(pattern)) or "") .. ", got success", 2)
	end
	err = tostring(err)
	if pattern and not err:find(pattern, 1, true) then
		error("error " .. show(err) .. " does not contain " .. show(pattern), 2)
	end
	return err
end

local passed, failed = 0, 0
local files = { ... }
if #files == 0 then
	io.stderr:write("usage: lua5.1 runner.lua test_file.lua...\n")
	os.exit(2)
end

for _, file in ipairs(files) do
	local tests = {}
	_G.test = function(name, fn)
		table.insert(tests, { name = name, fn = fn })
	end
	local chunk, err = loadfile(file)
	if not chunk then
		print("FAIL " .. file .. ": cannot load: " .. tostring(err))
		failed = failed + 1
	else
		local ok, lerr = pcall(chunk)
		if not ok then
			print("FAIL " .. file .. ": error while loading: " .. tostring(lerr))
			failed = failed + 1
		end
	end
	local short = file:match("[^/]*$")
	for _, t in ipairs(tests) do
		local ok, terr = xpcall(t.fn, function(e)
			if os.getenv("RUNBOX_LUA_TRACE") then
				return tostring(e) .. "\n" .. debug.traceback("", 2)
			end
			return tostring(e)
		end)
		if ok then
			passed = passed + 1
		else
			failed = failed + 1
			-- one line per failure (set RUNBOX_LUA_TRACE=1 for tracebacks)
			if not os.getenv("RUNBOX_LUA_TRACE") then
				terr = terr:gsub("\n", "\\n")
			end
			print("FAIL " .. short .. ": " .. t.name .. ": " .. terr)
		end
	end
end

print(passed .. " passed, " .. failed .. " failed")
os.exit(failed > 0 and 1 or 0)
