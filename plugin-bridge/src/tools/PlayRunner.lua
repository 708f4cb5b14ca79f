-- tools/PlayRunner.lua - the Luau source of the temporary server Script that
-- run_script_in_play_mode adds for the test (see tools/Playtest.lua). Not a tool group.
--
-- The user's code comes first, as a vararg function that sees none of the runner's locals: code
-- that uses `...` compiles (it would not inside a plain function), and an assignment to a
-- "global" such as `finished = true` cannot reach the runner's state. The runner runs only in
-- the test whose nonce it carries (a copy kept by an autosave or a publish does nothing).

local PlayRunner = {}

PlayRunner.MAX_LOGS = 500 -- log lines a run keeps (logCount says how many there were)

-- The Luau source of the temporary server Script: the user's code first, as a vararg function
-- that sees none of the runner's locals, then the runner.
function PlayRunner.wrapUser(code)
	return "local __runbox_user = function(...)\n" .. code .. "\nend\n"
end

function PlayRunner.source(code, timeout, nonce)
	return table.concat({
		PlayRunner.wrapUser(code),
		"local __runbox = {}",
		"do",
		"\tlocal STS = game:GetService(\"StudioTestService\")",
		"\tlocal RunService = game:GetService(\"RunService\")",
		"\tlocal okArgs, args = pcall(function() return STS:GetTestArgs() end)",
		"\tif not RunService:IsStudio() or not okArgs or type(args) ~= \"table\" or type(args.runbox) ~= \"table\"",
		"\t\tor args.runbox.nonce ~= " .. string.format("%q", nonce) .. " then",
		"\t\treturn -- not the test Runbox started for this code (a stale copy of the runner)",
		"\tend",
		"\tlocal LogService = game:GetService(\"LogService\")",
		"\tlocal HttpService = game:GetService(\"HttpService\")",
		"\tlocal logs, logCount, started, finished = {}, 0, os.clock(), false",
		"\tlocal conn = LogService.MessageOut:Connect(function(message, kind)",
		"\t\tlogCount = logCount + 1",
		"\t\tif #logs < " .. PlayRunner.MAX_LOGS .. " then",
		"\t\t\tlocal level = \"info\"",
		"\t\t\tif kind == Enum.MessageType.MessageWarning then level = \"warn\"",
		"\t\t\telseif kind == Enum.MessageType.MessageError then level = \"error\" end",
		"\t\t\ttable.insert(logs, { level = level, message = message })",
		"\t\tend",
		"\tend)",
		"\tlocal function finish(result)",
		"\t\tif finished then return end",
		"\t\tfinished = true",
		"\t\tconn:Disconnect()",
		"\t\tresult.logs = logs",
		"\t\tresult.logCount = logCount",
		"\t\tresult.duration = os.clock() - started",
		"\t\tSTS:EndTest(result)",
		"\tend",
		"\ttask.delay(" .. string.format("%d", timeout) .. ", function()",
		"\t\tfinish({ success = false, isTimeout = true, error = \"timed out after " .. timeout .. " s\" })",
		"\tend)",
		"\ttask.spawn(function()",
		"\t\tlocal ok, value = pcall(__runbox_user)",
		"\t\tif ok then",
		"\t\t\tif type(value) == \"table\" then",
		"\t\t\t\tlocal okJ, text = pcall(function() return HttpService:JSONEncode(value) end)",
		"\t\t\t\tvalue = okJ and text or tostring(value)",
		"\t\t\telseif value ~= nil then",
		"\t\t\t\tvalue = tostring(value)",
		"\t\t\tend",
		"\t\t\tfinish({ success = true, value = value })",
		"\t\telse",
		"\t\t\tfinish({ success = false, error = tostring(value) })",
		"\t\tend",
		"\tend)",
		"end",
	}, "\n")
end

return PlayRunner
